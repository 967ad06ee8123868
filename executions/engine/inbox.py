"""The inbox: facts a worker wrote into its attempt's row because another unit of work
held the execution's lock, turned into events by the next unit under that lock.

A worker that finds the lock taken does not wait for it: its claim (task_started) or its
result goes into the Attempt row, and whoever holds the lock appends it after its own
commit (coalesced orchestration: one fold and one decide for every fact that arrived
meanwhile). Which of those facts the log still wants is decided here, against the state
folded so far: a fact about an attempt the log has moved past (cancelled while its result
waited, a claim already logged) is dropped, as a late result under the lock is refused.

Pure: no Django.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from executions.engine.events import Decision, EventType
from executions.engine.state import ExecutionState
from executions.engine.statuses import TaskStatus

#: An attempt row's stored status once its result is written -> the result's event.
RESULT_EVENTS = {
    "succeeded": EventType.TASK_COMPLETED,
    "failed": EventType.TASK_FAILED,
    "timed_out": EventType.TASK_TIMED_OUT,
}


@dataclass(frozen=True)
class Row:
    """What the inbox reads of an attempt row with unlogged facts."""

    pk: int
    node_id: str
    attempt: int
    status: str
    worker_id: str
    claimed_at: datetime | None
    finished_at: datetime | None
    result: dict[str, Any] | None


@dataclass(frozen=True)
class Fact:
    row: Row
    decision: Decision
    at: datetime

    @property
    def is_result(self) -> bool:
        return self.decision.type != EventType.TASK_STARTED


def facts(rows: Iterable[Row]) -> list[Fact]:
    """Every fact the rows hold, in the order they happened (a claim before its result)."""
    found: list[tuple[datetime, int, Fact]] = []
    for row in rows:
        if row.claimed_at is not None:
            started = Decision(
                EventType.TASK_STARTED, row.node_id, row.attempt, {"worker": row.worker_id}
            )
            found.append((row.claimed_at, 0, Fact(row, started, row.claimed_at)))
        kind = RESULT_EVENTS.get(row.status)
        if kind is not None and row.result is not None and row.finished_at is not None:
            result = Decision(kind, row.node_id, row.attempt, row.result)
            # Never before its own claim, whatever the worker's clock did in between.
            at = max(row.finished_at, row.claimed_at or row.finished_at)
            found.append((at, 1, Fact(row, result, at)))
    found.sort(key=lambda item: (item[0], item[1], item[2].row.pk))
    return [fact for _, _, fact in found]


def admits(state: ExecutionState, fact: Fact) -> bool:
    """Whether the log, as folded so far, still wants the fact: a claim of the node's
    current attempt while it is scheduled, a result of it while it runs."""
    node = state.peek(fact.decision.node_id or "")
    if node.attempt != fact.decision.attempt:
        return False
    wanted = TaskStatus.RUNNING if fact.is_result else TaskStatus.SCHEDULED
    return node.status == wanted


def dropped_status(state: ExecutionState, fact: Fact) -> str | None:
    """The status an attempt row whose result the log refused must take to agree with the
    log (executions/integrity.py), or None to keep its own: a node cancelled while the
    result waited is cancelled, as the cancel's effect would have made the row."""
    if not fact.is_result:
        return None
    node = state.peek(fact.decision.node_id or "")
    return "cancelled" if node.status == TaskStatus.CANCELLED else None
