"""How a node starts: the first decision for a node whose trigger rule holds.

What a node of each type does when it starts is its kind's (workflows/kinds/); this
module turns the kind's answer into the event the log records.
"""

from __future__ import annotations

from collections.abc import Iterator, Set
from datetime import datetime
from typing import Any

from executions.engine import waits
from executions.engine.errors import ErrorRecord
from executions.engine.events import Decision, EventType
from executions.engine.payloads import (
    Reason,
    TaskCompleted,
    TaskFailed,
    TaskScheduled,
    TimerStarted,
    decided,
)
from executions.engine.timeutil import plus_seconds
from workflows.dsl import Node
from workflows.dsl.templates import TemplateError, search
from workflows.kinds import WORKER_NAMES, get_kind
from workflows.kinds.base import Complete, LimitExceeded, Schedule, Wait

#: Types whose attempts run on a worker; the others are handled by the orchestrator.
#: (A workflow node's worker starts the child execution; its result comes when the child
#: ends.) Derived from the registry: a kind says so with `runs_on_worker`.
WORKER_TYPES: Set[str] = WORKER_NAMES

__all__ = ["WORKER_TYPES", "LimitExceeded", "start_node"]


def start_node(
    node: Node, attempt: int, context: dict[str, Any], now: datetime | None
) -> Iterator[Decision]:
    try:
        if node.when is not None and not search(node.when, context):
            yield decided(EventType.TASK_SKIPPED, Reason(reason="when is false"), node.id)
            return
        kind = get_kind(node.type)
        if kind is None:
            raise _Unsupported(node.type)
        yield _recorded(node, attempt, kind.start(node, context, now), now)
    except (TemplateError, _Unsupported, ValueError, TypeError) as exc:
        error_type = "TemplateError" if isinstance(exc, TemplateError) else type(exc).__name__
        error = ErrorRecord(error_type, str(exc), retryable=False)
        yield decided(EventType.TASK_FAILED, TaskFailed(error=error), node.id, attempt)


def _recorded(
    node: Node, attempt: int, start: Schedule | Wait | Complete, now: datetime | None
) -> Decision:
    """The event a kind's start is recorded as."""
    if isinstance(start, Wait):
        due = start.due if start.due is not None else plus_seconds(now, start.seconds)
        timer = TimerStarted(input={**start.input, "due_at": due.isoformat()})
        return decided(EventType.TIMER_STARTED, timer, node.id, attempt)
    if isinstance(start, Complete):
        return decided(
            EventType.TASK_COMPLETED, TaskCompleted(output=start.output), node.id, attempt
        )
    deadline = waits.deadline(node, now)
    scheduled = TaskScheduled(input=start.input, type=node.type, timeout_at=deadline)
    return decided(EventType.TASK_SCHEDULED, scheduled, node.id, attempt)


class _Unsupported(Exception):
    def __init__(self, node_type: str):
        super().__init__(f"node type '{node_type}' is not supported by this engine version yet")
