"""Developer scripts; `scripts.services` is importable by tests."""
