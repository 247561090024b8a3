"""Alembic migrations of the blockrepo schema."""
