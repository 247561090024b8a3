"""Backup and restore: the whole repository (history, users, roles included) in one portable file."""
