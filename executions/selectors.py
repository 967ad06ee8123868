"""Reads for the API and admin."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models import Exists, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from executions.engine.statuses import TaskStatus
from executions.models import Attempt, Event, Execution, Task
from executions.sqlnames import column, sql
from workflows.models import WorkflowDefinition, WorkflowVersion
from workflows.selectors import MAX_ID, workflow_get


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


def version_named(ref: object, number: int | None) -> WorkflowVersion:
    """The version a start request names (`"workflow": id or name`, `"version"` or the
    latest), with its workflow, in one query: workflow_named's rules (an id first, then a
    name) without reading the workflow's latest definition and then the version again.
    A 400 names what is missing."""
    if connection.vendor == "postgresql" and _is_ref(ref):
        found = _version_by_sql(str(ref), number)
        if found is not None:
            return found
        workflow = None  # the 400 below
    else:
        workflow = _workflow_id(ref)
    if workflow is not None:
        versions = WorkflowVersion.objects.select_related("workflow").filter(workflow_id=workflow)
        if number is not None:
            versions = versions.filter(version=number)
        found = versions.order_by("-version").first()
        if found is not None:
            return found
    named = workflow_named(ref)  # the 400 for a workflow that does not exist
    raise ValidationError({"version": [f"Workflow '{named.name}' has no version {number}."]})


def _is_ref(ref: object) -> bool:
    return not isinstance(ref, bool) and isinstance(ref, int | str)


_VERSION_COLUMNS = ("id", "workflow_id", "version", "created_at", "created_by")
_WORKFLOW_COLUMNS = ("id", "name", "description", "created_at", "created_by")

#: version_named's query, written once: built through the ORM (two subqueries under a
#: Coalesce) it cost more CPU per POST /executions than anything else before the start.
#: Without the definition column: the start reads the parsed one (executions/definitions).
_VERSION_SQL = sql(
    """
SELECT {version}, {workflow}
FROM {v} v JOIN {w} w ON w.{w.id} = v.{v.workflow}
WHERE v.{v.workflow} = COALESCE(
    (SELECT {w.id} FROM {w} WHERE {w.id} = %(id)s),
    (SELECT {w.id} FROM {w} WHERE {w.name} = %(name)s)
) AND (%(number)s::bigint IS NULL OR v.{v.version} = %(number)s::bigint)
ORDER BY v.{v.version} DESC
LIMIT 1
""",
    v=WorkflowVersion,
    w=WorkflowDefinition,
    version=", ".join(f"v.{column(WorkflowVersion, c)}" for c in _VERSION_COLUMNS),
    workflow=", ".join(f"w.{column(WorkflowDefinition, c)}" for c in _WORKFLOW_COLUMNS),
)


def _version_by_sql(ref: str, number: int | None) -> WorkflowVersion | None:
    """version_named's rules in one statement (PostgreSQL): an id first, then a name."""
    as_id = ref.isascii() and ref.isdigit() and len(ref) <= 19 and 0 < int(ref) <= MAX_ID
    params = {"id": int(ref) if as_id else None, "name": ref, "number": number}
    with connection.cursor() as cursor:
        cursor.execute(_VERSION_SQL, params)
        row = cursor.fetchone()
    if row is None:
        return None
    split = len(_VERSION_COLUMNS)
    # The definition column stays deferred (loaded if something reads it).
    version = WorkflowVersion.from_db(connection.alias, _VERSION_COLUMNS, row[:split])
    version.workflow = WorkflowDefinition.from_db(connection.alias, _WORKFLOW_COLUMNS, row[split:])
    return version


def _workflow_id(ref: object):
    """The id of the workflow `ref` names, as a subquery expression (None: not a ref)."""
    if isinstance(ref, bool) or not isinstance(ref, int | str):
        return None
    ref = str(ref)
    by_name = Subquery(WorkflowDefinition.objects.filter(name=ref).values("pk")[:1])
    if ref.isascii() and ref.isdigit() and len(ref) <= 19 and 0 < int(ref) <= MAX_ID:
        by_id = Subquery(WorkflowDefinition.objects.filter(pk=int(ref)).values("pk")[:1])
        return Coalesce(by_id, by_name)
    return by_name
