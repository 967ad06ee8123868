"""The engine's one wall clock: every time the shell stamps or compares (event timestamps,
leases, timers, deadlines) is read here, never from timezone.now() or time.time() directly
(tests/unit/test_clock_seam.py keeps it so).

In production it is the system's clock, in UTC (what Django's timezone.now() returns with
USE_TZ, which the engine needs). workflows.testing shifts it forward (`shifted`) so that a
delay of a day passes at once while everything recorded says a day went by. Durations of
work really done in this process (how long a function ran, a lease keeper's sleep, an HTTP
call's deadline) are measured with time.monotonic(), which no shift touches.

The database's own clock is never read: leases, claims and timers are written with this
clock's time as parameters, so a shifted clock shifts them all alike.

A leaf: it imports nothing of the engine nor Django, so every app, the executors and the
definitions' parser too, may use it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

_lock = threading.Lock()
#: How far ahead of the system's clock this process's clock runs (zero but under a harness).
_offset = timedelta(0)


def now() -> datetime:
    """The current time, timezone-aware (UTC), as the engine records it."""
    return datetime.now(UTC) + _offset


def offset() -> timedelta:
    """How far this process's clock runs ahead of the real one."""
    return _offset


def advance(by: timedelta) -> None:
    """Move the clock forward (never back: the log's timestamps only go forward)."""
    global _offset
    with _lock:
        _offset += max(by, timedelta(0))


@contextmanager
def shifted(ahead: timedelta) -> Iterator[None]:
    """The clock `ahead` of the real one inside the block (moved on by advance()), as it
    was after it."""
    global _offset
    with _lock:
        before, _offset = _offset, ahead
    try:
        yield
    finally:
        with _lock:
            _offset = before
