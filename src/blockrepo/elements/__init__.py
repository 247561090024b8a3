"""Elements: building blocks, their typed attribute values and their relations."""
