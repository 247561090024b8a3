"""Alembic migration scripts, one file per schema revision."""
