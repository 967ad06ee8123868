"""The worker runtime (runtime.py: lease keeper, eager loop, outage retries; watchdog.py:
the hard limit). Executors in nodes/ see only nodes.context (Claimed, NodeContext)."""
