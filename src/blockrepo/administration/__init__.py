"""Administration of users, roles, attributes and attribute groups."""
