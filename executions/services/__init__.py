"""Writes. Every service takes keyword-only arguments and owns its transaction."""
