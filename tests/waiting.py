"""Waiting in tests: poll until something has happened, or fail naming what never did.

Every timeout a test gives is multiplied by WORKFLOW_TEST_SLOWDOWN (default 1), so a slow
or loaded machine (a CI runner, two suites at once) gets more time without a test being
edited. A wait that passes returns as soon as its predicate holds, so a larger factor
costs nothing on a machine that is fast enough.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: The environment variable read for the factor (a positive number; 1 when unset).
SLOWDOWN = "WORKFLOW_TEST_SLOWDOWN"

#: How often a predicate is polled, in seconds (not scaled: polling faster costs little).
INTERVAL = 0.05


def slowdown() -> float:
    """The factor from the environment, read at each call so a test may set it."""
    raw = os.environ.get(SLOWDOWN, "").strip() or "1"
    try:
        factor = float(raw)
    except ValueError:
        raise ValueError(f"{SLOWDOWN}={raw!r}: give a number such as 1 or 2.5") from None
    if not factor > 0:
        raise ValueError(f"{SLOWDOWN}={raw!r}: give a number above 0 (1 is normal speed)")
    return factor


def scaled(seconds: float) -> float:
    """`seconds` on this machine: for a bound a test genuinely asserts in time."""
    return seconds * slowdown()


def eventually(
    predicate: Callable[[], T | None],
    timeout: float,
    what: str | Callable[[], str],
    *,
    interval: float = INTERVAL,
) -> T:
    """Poll `predicate` until it returns a truthy value, and return that value.

    An exception from the predicate counts as "not yet" (a row not written yet, a page
    element replaced under the reader) and is kept to explain a timeout. The predicate
    is always called once more at the deadline, so a slow poll cannot skip the last look.
    After `timeout` (times the slowdown factor) raises AssertionError naming `what` and the
    last value or exception seen; `what` may be a function, for a description that is
    costly to build (the workers' logs) and only wanted when the wait fails."""
    budget = scaled(timeout)
    deadline = time.monotonic() + budget
    last_value: object = None
    last_error: Exception | None = None
    while True:
        try:
            value = predicate()
        except Exception as error:
            last_error = error
        else:
            if value:
                return value
            last_value, last_error = value, None
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        time.sleep(min(interval, remaining))
    described = what() if callable(what) else what
    seen = f"last raised {last_error!r}" if last_error is not None else f"last was {last_value!r}"
    raise AssertionError(f"timed out after {budget:g}s: {described} ({seen})") from last_error
