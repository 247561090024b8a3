"""The web interface for architects: static pages served at `/`, a client of the public REST API."""
