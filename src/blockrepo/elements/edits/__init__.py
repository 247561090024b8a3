"""Edits across all stored elements, made by metamodel edits and value removal."""
