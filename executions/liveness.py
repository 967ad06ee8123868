"""Whether the sweeper is still sweeping: the time of its last completed sweep, and the
age past which that counts as stale (what /healthz, /metrics and the console show).

Nothing in the engine notices on its own that sweeps stopped (no lease times out, no
timer fires, and that looks like nothing is wrong), so the sweep records its end and
this module reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from executions.models import SweeperState
from workflows import clock
from workflows.conf import engine_settings

SWEEPER = "sweeper"


def stale_after_seconds() -> float:
    """How old the last completed sweep may be before the sweeper counts as stale:
    WORKFLOW_SWEEPER_STALE_SECONDS, by default ten sweep intervals and at least 30 s
    (a sweep that waits behind a worker's long task is late, not dead)."""
    configured = engine_settings.SWEEPER_STALE_SECONDS
    if configured is not None:
        return configured
    return max(10 * engine_settings.SWEEP_INTERVAL, 30.0)


@dataclass(frozen=True)
class SweeperStatus:
    #: "ok", "stale" (its last sweep is older than stale_after), or "never" (no sweep
    #: completed since the database was made: beat or the workers never ran one).
    state: str
    last_sweep_at: datetime | None
    #: Seconds since the last completed sweep (None: never).
    age_seconds: float | None
    stale_after_seconds: float

    def as_json(self) -> dict[str, object]:
        return {
            "state": self.state,
            "last_sweep_at": self.last_sweep_at.isoformat() if self.last_sweep_at else None,
            "age_seconds": None if self.age_seconds is None else round(self.age_seconds, 3),
            "stale_after_seconds": self.stale_after_seconds,
        }


def sweeper_status(*, now: datetime | None = None) -> SweeperStatus:
    now = now or clock.now()
    limit = stale_after_seconds()
    row = SweeperState.objects.filter(name=SWEEPER).values_list("completed_at", flat=True)
    completed = row.first()
    if completed is None:
        return SweeperStatus("never", None, None, limit)
    age = max((now - completed).total_seconds(), 0.0)
    return SweeperStatus("ok" if age <= limit else "stale", completed, age, limit)


def sweep_completed(*, started: datetime, report: dict[str, int]) -> None:
    """Record a finished sweep. An upsert: two sweepers at once both land, the later wins."""
    ended = clock.now()
    row = SweeperState(
        name=SWEEPER,
        completed_at=ended,
        took_seconds=max((ended - started).total_seconds(), 0.0),
        report=report,
    )
    SweeperState.objects.bulk_create(
        [row],
        update_conflicts=True,
        unique_fields=["name"],
        update_fields=["completed_at", "took_seconds", "report"],
    )
