"""Access: users, roles, type and functional permissions, attribute-group permissions."""
