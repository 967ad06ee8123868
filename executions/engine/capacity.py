"""Which held attempts to release into the broker: the pure choice behind pools and the
per-execution in-flight cap (WORKFLOW_MAX_IN_FLIGHT_PER_EXECUTION).

A held attempt is scheduled (its task_scheduled is in the log) but has no message in the
broker. The shell (executions/kernel/capacity.py) reads the counts and the waiting list
under the pool's (or the execution's) lock, asks `release` which to publish, marks them
published and sends their messages after commit. The claim gate is the hard bound (it
counts running attempts under the pool lock); this choice only keeps the broker from
holding messages that would be refused.

Pure Python: no Django, no clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from executions.engine.state import ExecutionState
from executions.engine.statuses import TaskStatus


@dataclass(frozen=True, order=True)
class Waiting:
    """One held attempt, as the order of release sees it."""

    #: The execution's priority, 0-9: 9 is released first (negated in `sort_key`).
    priority: int
    #: When it was scheduled: first in, first out within a priority.
    scheduled_at: datetime
    #: The attempt row's id: the tiebreak between attempts scheduled in one unit.
    attempt_id: int

    def sort_key(self) -> tuple[int, datetime, int]:
        return (-self.priority, self.scheduled_at, self.attempt_id)


def room(limit: int, busy: int) -> int:
    """Free capacity: `limit` minus what already holds it, never negative (an operator
    may lower a pool's slots below what runs; nothing is released until it drains)."""
    return max(limit - busy, 0)


def pool_room(slots: int, running: int, unclaimed: int) -> int:
    """What a pool may release: its slots less the attempts running in it and those
    already in the broker but not yet claimed (each will take a slot when claimed)."""
    return room(slots, running + unclaimed)


def release(free: int, waiting: Sequence[Waiting]) -> list[int]:
    """The attempt ids to publish now: the first `free` of `waiting` by priority (high
    first), then scheduling time, then id. Never more than `free`, never one that an
    earlier attempt of the same priority still waits behind."""
    if free <= 0:
        return []
    ordered = sorted(waiting, key=Waiting.sort_key)
    return [w.attempt_id for w in ordered[:free]]


def crowded(state: ExecutionState, cap: int) -> bool:
    """Whether the execution has more than `cap` attempts scheduled and not started, so
    some may be held: only then does the shell count its messages and top it up. At or
    under the cap every attempt fits in the broker and is published as it is scheduled
    (no query spent on the cap). Pool attempts count too: it errs towards counting."""
    if len(state.nodes) <= cap:
        return False
    return sum(1 for node in state.nodes.values() if node.status == TaskStatus.SCHEDULED) > cap
