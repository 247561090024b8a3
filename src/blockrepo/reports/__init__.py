"""Saved reports: list filters, iteraQL queries and diagram configurations kept in the repository."""
