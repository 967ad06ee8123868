"""Executors: run one attempt of a node and return its JSON output or raise NodeError."""
