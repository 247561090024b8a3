"""Planning scenarios: a future landscape kept beside main as changes on top of a base revision."""
