"""Which fire times of a schedule run now: catch-up after beat was down, and overlap with
an execution it started that still runs. Pure functions of the schedule's settings."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

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


#: Jitter delays are whole milliseconds: fine enough to spread fires, exact to compare.
_JITTER_STEPS_PER_SECOND = 1000


def fire_time_text(fire_time: datetime) -> str:
    """The fire time as its input templates see it: ISO 8601 in UTC, e.g.
    2026-03-02T10:05:00Z."""
    return fire_time.astimezone(UTC).isoformat().replace("+00:00", "Z")


def fire_delay(schedule_id: str, fire_time: datetime, jitter_seconds: int) -> timedelta:
    """How long after its fire time a fire starts: in [0, jitter_seconds), a hash of the
    schedule and the fire time, so every beat, redelivery and replay of one fire agrees."""
    steps = jitter_seconds * _JITTER_STEPS_PER_SECOND
    if steps <= 0:
        return timedelta(0)
    seed = f"{schedule_id}:{fire_time_text(fire_time)}".encode()
    digest = int.from_bytes(hashlib.sha256(seed).digest()[:8], "big")
    return timedelta(milliseconds=digest % steps)


def fire_context(schedule_id: str, fire_time: datetime) -> dict[str, Any]:
    """What `{{ schedule.* }}` in a schedule's input reads."""
    return {"schedule": {"id": schedule_id, "fire_time": fire_time_text(fire_time)}}
