"""Token buckets behind nodes' rate limits: the pure arithmetic.

A bucket holds up to `burst` tokens and gains `per_second` of them a second; an attempt
starts only by taking a whole token. So in any window of t seconds at most
burst + per_second * t attempts start, whatever the number of executions and workers.
The shell (executions/kernel/rates.py) keeps (tokens, refilled_at) in a row and calls
these under its lock. Pure Python: no Django, no clock.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta


def refilled(tokens: float, since: datetime, now: datetime, per_second: float, burst: int) -> float:
    """The tokens at `now` of a bucket that had `tokens` at `since`: never past `burst`,
    and never fewer than it had (a clock read earlier than `since` adds nothing)."""
    elapsed = max((now - since).total_seconds(), 0.0)
    return min(float(burst), tokens + elapsed * per_second)


def whole(tokens: float) -> int:
    """How many attempts the bucket can start now."""
    return max(math.floor(tokens + 1e-9), 0)


def next_token_at(tokens: float, now: datetime, per_second: float, waiting: int = 0) -> datetime:
    """When the bucket will hold a whole token for the attempt with `waiting` others
    ahead of it (now, if it already does)."""
    missing = waiting + 1 - tokens
    if missing <= 1e-9:
        return now
    return now + timedelta(seconds=missing / per_second)
