"""Revisions: the repository's revision counters, and the change log every write records into."""
