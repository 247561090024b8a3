"""API tokens: Bearer credentials narrower than their owner, stored only as keyed hashes."""
