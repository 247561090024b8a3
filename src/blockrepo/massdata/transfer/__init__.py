"""Export and import of the whole repository (metamodel, elements, relations) as JSON and xlsx."""
