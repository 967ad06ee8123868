"""The pure core: fold(events) -> state and decide(definition, state) -> decisions.

Nothing here imports Django or Celery, reads a clock, draws a random number or does
I/O. Time comes from event timestamps; jitter from a hash of (execution, node, attempt).
"""
