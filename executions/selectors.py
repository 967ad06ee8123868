"""Reads for the API and admin."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db.models import Exists, OuterRef, QuerySet

from executions.engine.statuses import TaskStatus
from executions.models import Attempt, Event, Execution, Task
from workflows.models import WorkflowDefinition
from workflows.selectors import workflow_get


def execution_list(*, status: str | None = None, workflow: str | None = None) -> QuerySet:
    queryset = Execution.objects.select_related("workflow", "version")
    if status:
        queryset = queryset.filter(status=status)
    if workflow:
        found = workflow_by_ref(workflow)
        queryset = queryset.filter(workflow=found) if found else queryset.none()
    return queryset.order_by("-created_at", "-id")


def with_failed_nodes(queryset: QuerySet, failed: bool = True) -> QuerySet:
    """Executions some node of which failed (or, failed=False, none did). Answered by the
    partial index task_failed_idx: failed tasks are few."""
    any_failed = Exists(Task.objects.filter(execution=OuterRef("pk"), status=TaskStatus.FAILED))
    return queryset.filter(any_failed if failed else ~any_failed)


def workflow_by_ref(ref: object) -> WorkflowDefinition | None:
    """A workflow by numeric id or by name (JSON may give the id as a number)."""
    if isinstance(ref, bool) or not isinstance(ref, int | str):
        return None
    return workflow_get(ref=str(ref))


def workflow_named(ref: object) -> WorkflowDefinition:
    """The workflow a request body names (`"workflow": id or name`), or a 400 naming it."""
    workflow = workflow_by_ref(ref)
    if workflow is None:
        raise ValidationError({"workflow": [f"No workflow with id or name {ref!r}."]})
    return workflow


def task_list(*, execution: Execution) -> QuerySet:
    return Task.objects.filter(execution=execution).order_by("id")


def event_list(*, execution: Execution, after_seq: int = 0, node_id: str | None = None) -> QuerySet:
    events = Event.objects.filter(execution=execution, seq__gt=after_seq)
    if node_id is not None:
        events = events.filter(node_id=node_id)
    return events.order_by("seq")


def attempt_list(*, execution: Execution, node_id: str) -> QuerySet:
    return Attempt.objects.filter(execution=execution, node_id=node_id).order_by("attempt")


def latest(queryset: QuerySet, field: str, count: int) -> tuple[list, int]:
    """The last `count` rows by `field`, in ascending order, and how many there are."""
    rows = list(queryset.order_by(f"-{field}")[:count])
    total = len(rows) if len(rows) < count else queryset.count()
    return rows[::-1], total
