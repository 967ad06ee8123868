"""Long polling without holding the database: look, and between looks sleep with the
connection closed (outside a transaction), so a client waiting 30 seconds costs a few
short queries, not a connection or an open transaction for 30 seconds.

Polling works the same on SQLite and PostgreSQL; the looks are PK or index lookups."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.db import connection
from django.db.models import QuerySet

#: The first pause between looks, doubled each time up to LONGEST: a quick answer when
#: the event follows at once, about 4 looks a second after that.
FIRST_STEP = 0.05
LONGEST_STEP = 0.25


def wait_for_rows(
    queryset: QuerySet,
    *,
    seconds: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] | None = None,
) -> bool:
    """True as soon as `queryset` has a row; False once `seconds` passed without one.
    `sleep`: how to pause (default `pause`, looked up at each call)."""
    deadline = clock() + seconds
    step = FIRST_STEP
    while True:
        if queryset.exists():
            return True
        left = deadline - clock()
        if left <= 0:
            return False
        _release_connection()
        (sleep or pause)(min(step, left))
        step = min(step * 2, LONGEST_STEP)


def pause(seconds: float) -> None:
    time.sleep(seconds)


def _release_connection() -> None:
    # Inside a transaction (a test's, or a caller's atomic block) closing would break it;
    # there the caller holds the transaction anyway. In autocommit the next look reconnects.
    if not connection.in_atomic_block:
        connection.close()
