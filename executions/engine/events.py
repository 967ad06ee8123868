from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any


class EventType(StrEnum):
    WORKFLOW_STARTED = "workflow_started"
    TASK_SCHEDULED = "task_scheduled"
    TASK_STARTED = "task_started"
    TASK_COMPLETED = "task_completed"
    TASK_FAILED = "task_failed"
    TASK_TIMED_OUT = "task_timed_out"
    TASK_RETRY_SCHEDULED = "task_retry_scheduled"
    TASK_SKIPPED = "task_skipped"
    TASK_CANCELLED = "task_cancelled"
    TIMER_STARTED = "timer_started"
    TIMER_FIRED = "timer_fired"
    SIGNAL_RECEIVED = "signal_received"
    CHILD_WORKFLOW_STARTED = "child_workflow_started"
    COMPENSATION_SCHEDULED = "compensation_scheduled"
    RETRY_REQUESTED = "retry_requested"
    WORKFLOW_CANCEL_REQUESTED = "workflow_cancel_requested"
    #: An operator paused / resumed the execution (data: {"by"}).
    WORKFLOW_PAUSED = "workflow_paused"
    WORKFLOW_RESUMED = "workflow_resumed"
    WORKFLOW_COMPLETED = "workflow_completed"
    WORKFLOW_FAILED = "workflow_failed"
    WORKFLOW_CANCELLED = "workflow_cancelled"
    #: A fact: handling this execution raised inside the engine (a bug, or input the
    #: engine could not contain). decide ends the execution failed with that error.
    ENGINE_ERROR = "engine_error"
    #: A decision, only in fault-injected executions (engine/faults.py): a fault that hits
    #: the attempt just scheduled.
    FAULT_INJECTED = "fault_injected"
    #: An approval node's timeout_seconds passed unanswered: what on_timeout made of it.
    APPROVAL_TIMED_OUT = "approval_timed_out"
    #: A decision: the execution's deadline timer fired while it ran (data:
    #: {"deadline_at", "timeout_seconds"}); it ends failed with a WorkflowTimeout.
    WORKFLOW_TIMED_OUT = "workflow_timed_out"
    #: A decision: a node out of attempts under retry_policy.on_exhausted "park" waits.
    TASK_PARKED = "task_parked"
    #: An operator's answer to a parked node (data: {"action": "retry" | "fail", "by"}).
    TASK_UNPARKED = "task_unparked"
    #: A fact: a worker's claim found the node's rate limit without a token; the attempt
    #: waits for one (data: {"key", "until"}). Recorded once per attempt.
    TASK_RATE_LIMITED = "task_rate_limited"


#: At most one of these per (node, attempt): enforced by a database constraint.
RESULT_TYPES = frozenset(
    {
        EventType.TASK_COMPLETED,
        EventType.TASK_FAILED,
        EventType.TASK_TIMED_OUT,
        EventType.TASK_CANCELLED,
    }
)


class Source(StrEnum):
    """Who wrote an event. Only ENGINE events are decisions that replay re-derives."""

    ENGINE = "engine"
    WORKER = "worker"
    TIMER = "timer"
    SWEEPER = "sweeper"
    API = "api"


@dataclass(frozen=True)
class Event:
    seq: int
    type: EventType
    timestamp: datetime
    node_id: str | None = None
    attempt: int | None = None
    data: dict[str, Any] = field(default_factory=dict)
    source: Source = Source.ENGINE
    #: Inside decide only: the typed payload `data` was encoded from, so folding the
    #: decision into decide's working copy need not decode it again (payloads.decode).
    payload: object = field(default=None, compare=False, repr=False)

    @classmethod
    def stored(
        cls,
        seq: int,
        type: EventType,
        timestamp: datetime,
        node_id: str | None,
        attempt: int | None,
        data: dict[str, Any],
        source: Source,
    ) -> Event:
        """Event(...) of a stored row, every field given, filling the frozen instance's
        __dict__ (see Decision.built): a replay builds one per stored event."""
        event = object.__new__(cls)
        event.__dict__.update(
            seq=seq, type=type, timestamp=timestamp, node_id=node_id, attempt=attempt,
            data=data, source=source, payload=None,
        )  # fmt: skip
        return event


@dataclass(frozen=True)
class Decision:
    """An event the orchestrator decided to append (seq and timestamp come at append)."""

    type: EventType
    node_id: str | None = None
    attempt: int | None = None
    data: dict[str, Any] = field(default_factory=dict)
    #: The typed payload `data` is exactly the stored form of (payloads.decided), if any.
    payload: object = field(default=None, compare=False, repr=False)

    def as_event(self, seq: int, timestamp: datetime, *, typed: bool = False) -> Event:
        """typed: the event carries the payload too. Only for decide's working copy, where
        `data` cannot have been changed since it was encoded; the shell folds `data`."""
        event = object.__new__(Event)  # Event(...) without __init__: see `built`
        event.__dict__.update(
            seq=seq,
            type=self.type,
            timestamp=timestamp,
            node_id=self.node_id,
            attempt=self.attempt,
            data=self.data,
            source=Source.ENGINE,
            payload=self.payload if typed else None,
        )
        return event

    @classmethod
    def built(
        cls,
        type: EventType,
        node_id: str | None,
        attempt: int | None,
        data: dict[str, Any],
        payload: object,
    ) -> Decision:
        """Decision(...) with every field given, filling the frozen instance's __dict__:
        the dataclass __init__ sets each field through object.__setattr__, which made it
        a third of what decide spends making a decision (the same values)."""
        decision = object.__new__(cls)
        decision.__dict__.update(
            type=type, node_id=node_id, attempt=attempt, data=data, payload=payload
        )
        return decision
