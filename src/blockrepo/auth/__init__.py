"""Authentication: passwords, HTTP Basic, sessions, CSRF and login throttling."""
