"""Massdata: iteraQL queries, filtered and streamed listings, bulk writes, export and import."""
