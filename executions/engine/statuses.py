"""Status vocabularies, as the API reports them. Plain StrEnums: the core imports no Django;
the models turn them into field choices with `choices()`."""

from __future__ import annotations

from enum import StrEnum


class ExecutionStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    #: An operator paused it: decide takes no decision until it is resumed (or cancelled).
    PAUSED = "paused"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"


class TaskStatus(StrEnum):
    PENDING = "pending"
    SCHEDULED = "scheduled"
    RUNNING = "running"
    RETRYING = "retrying"
    WAITING = "waiting"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"
    #: Out of attempts under on_exhausted "park": waits for an operator's retry or fail.
    PARKED = "parked"


def choices(statuses: type[StrEnum]) -> list[tuple[str, str]]:
    """(value, label) pairs for a model field, labelled as Django's TextChoices would."""
    return [(status.value, status.name.replace("_", " ").title()) for status in statuses]


def values(statuses: type[StrEnum]) -> list[str]:
    return [status.value for status in statuses]


EXECUTION_TERMINAL = frozenset(
    {ExecutionStatus.SUCCEEDED, ExecutionStatus.FAILED, ExecutionStatus.CANCELLED}
)
#: Statuses in which a node is doing or awaiting work that may still produce an event.
TASK_ACTIVE = frozenset(
    {TaskStatus.SCHEDULED, TaskStatus.RUNNING, TaskStatus.RETRYING, TaskStatus.WAITING}
)
