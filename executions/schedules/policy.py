"""Which fire times of a schedule run now: catch-up after beat was down, and overlap with
an execution it started that still runs. Pure functions of the schedule's settings."""

from __future__ import annotations

from datetime import datetime, timedelta

#: A fire handled this soon after its time is on time, not a catch-up (beat fires at the
#: tick; its message may wait a little in the broker).
ON_TIME = timedelta(seconds=60)
#: At most this many missed fires are considered in one go (an every-minute cron after a
#: week down has 10,080): the latest ones.
MAX_CATCHUP = 1000


def to_fire(
    due: list[datetime], *, catchup: str, window_seconds: int, now: datetime
) -> list[datetime]:
    """Of the fire times `due` (oldest first, none after now + skew), those that run."""
    if not due:
        return []
    latest = due[-1]
    if catchup == "all":
        window = timedelta(seconds=window_seconds)
        return [moment for moment in due if now - moment <= max(window, ON_TIME)]
    if catchup == "none":
        return [latest] if now - latest <= ON_TIME else []
    return [latest]  # "last"


def overlap_outcome(overlap: str, *, running: bool, buffered: bool) -> str:
    """started, skipped or buffered, for one fire while executions of the schedule run."""
    if not running or overlap in ("allow", "cancel_other"):
        return "started"
    if overlap == "buffer_one" and not buffered:
        return "buffered"
    return "skipped"
