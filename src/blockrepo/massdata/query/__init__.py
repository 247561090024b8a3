"""iteraQL: the query language of the massdata API, parsed with lark and compiled to SQL."""
