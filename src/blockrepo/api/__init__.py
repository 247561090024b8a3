"""The HTTP layer: problem+json, middleware, request context, versioned routes."""
