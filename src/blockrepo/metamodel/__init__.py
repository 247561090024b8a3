"""Metamodel: building block types, attributes, attribute groups and relation types, all stored as data."""
