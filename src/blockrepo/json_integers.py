"""JSON numbers read as JSON Schema reads them: a number with a zero fraction (`7.0`) is an integer."""

from __future__ import annotations


def integral_number_as_int(value: object) -> object:
    """`2390.0` as 2390: JSON does not tell 7 from 7.0 and the published schemas' `integer` takes both,
    which strict checks would otherwise refuse; any other value is left for the caller's own check."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
