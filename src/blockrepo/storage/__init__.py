"""Storage: engine, declarative base, unit of work and migrations."""
