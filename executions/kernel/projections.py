"""Projections: Execution and Task rows as folded from the events. Always rebuildable."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from enum import Enum
from typing import Any

from django.db import connection, models

from executions.definitions import definition_for
from executions.engine.state import ExecutionState, NodeState
from executions.kernel.writes import ROWS_IN_ONE, Writes, as_json, insert_rows
from executions.models import Execution, Task
from executions.sqlnames import column, sql
from workflows.dsl import Definition

EXECUTION_FIELDS = ("status", "output", "error", "started_at", "ended_at", "deadline_at")
#: last_hash travels with last_seq: the next append chains onto it.
BOOKKEEPING_FIELDS = ("last_seq", "last_hash", "decided_seq", "snapshot", "snapshot_seq")


def task_fields(node: NodeState) -> dict[str, Any]:
    return {
        "status": node.status,
        "attempts": node.attempt,
        "retry_count": node.retry_count,
        "input": node.input,
        "output": node.output,
        "error": node.error,
        "started_at": node.started_at,
        "ended_at": node.ended_at,
        "next_retry_at": node.next_retry_at,
    }


def execution_fields(state: ExecutionState) -> dict[str, Any]:
    return {name: getattr(state, name) for name in EXECUTION_FIELDS}


def create_tasks(execution: Execution, definition: Definition) -> None:
    Task.objects.bulk_create(
        Task(execution=execution, node_id=node.id, type=node.type) for node in definition.nodes
    )


def project(
    execution: Execution,
    state: ExecutionState,
    node_ids: Iterable[str],
    definition: Definition | None = None,
) -> None:
    """Write the folded state of `node_ids` and of the execution (not its snapshot)."""
    save_execution(execution, state, snapshot=False)
    project_tasks(execution, state, node_ids, definition)


def save_execution(
    execution: Execution, state: ExecutionState, *, snapshot: bool, writes: Writes | None = None
) -> None:
    """The execution's projection and bookkeeping, in one UPDATE. `snapshot`: a new one was
    taken; else the (O(nodes) JSON) column is left as it was loaded. `writes`: staged
    there (kernel/writes.py) instead of sent now."""
    for name, value in execution_fields(state).items():
        setattr(execution, name, value)
    if execution._state.adding:
        # Begun before its row was written (services/start.py): the row as decided.
        if writes is not None:
            insert_rows(writes, [execution])
        else:
            execution.save(force_insert=True)
        return
    if writes is not None:
        statement = _UPDATE_EXECUTION_WITH_SNAPSHOT if snapshot else _UPDATE_EXECUTION
        writes.add(statement, _execution_values(execution, snapshot=snapshot))
        return
    execution.save(update_fields=_updated_fields(snapshot=snapshot))


#: save_execution's UPDATE as one statement of a unit's writes (PostgreSQL), its SET built
#: from the same field lists as the ORM's save, so neither can leave a column out. JSON
#: columns go in as JSON text; a JSON null is stored as SQL NULL, as Django stores None.
def _updated_fields(*, snapshot: bool) -> list[str]:
    fields = [*EXECUTION_FIELDS, *BOOKKEEPING_FIELDS]
    if not snapshot:
        fields.remove("snapshot")
    return fields


def _assignment(name: str) -> str:
    field = Execution._meta.get_field(name)
    target = column(Execution, name)
    if isinstance(field, models.JSONField):
        return f"{target} = NULLIF(%s::jsonb, 'null'::jsonb)"
    if isinstance(field, models.DateTimeField):
        return f"{target} = %s::timestamptz"
    return f"{target} = %s"


def _update_execution(*, snapshot: bool) -> str:
    assignments = ",\n    ".join(_assignment(name) for name in _updated_fields(snapshot=snapshot))
    return sql(f"UPDATE {{x}} SET\n    {assignments}\nWHERE {{x.id}} = %s", x=Execution)


_UPDATE_EXECUTION = _update_execution(snapshot=False)
_UPDATE_EXECUTION_WITH_SNAPSHOT = _update_execution(snapshot=True)


def _execution_values(execution: Execution, *, snapshot: bool) -> list[Any]:
    values: list[Any] = []
    for name in _updated_fields(snapshot=snapshot):
        value = getattr(execution, name)
        if isinstance(Execution._meta.get_field(name), models.JSONField):
            value = as_json(value)
        elif isinstance(value, Enum):
            value = value.value
        values.append(value)
    return [*values, execution.pk]


def project_tasks(
    execution: Execution,
    state: ExecutionState,
    node_ids: Iterable[str],
    definition: Definition | None = None,
    writes: Writes | None = None,
) -> None:
    """The Task rows of `node_ids`; a map's item tasks get theirs when they first appear
    (given the definition). Call inside the lock. `writes`: staged there, as one
    statement that updates the rows and inserts those missing (kernel/writes.py)."""
    touched = sorted(node_id for node_id in set(node_ids) if node_id in state.nodes)
    if execution.tasks_unwritten:
        _create_decided(execution, state, touched, definition, writes)
        return
    if writes is not None:
        if touched:
            # The update and the insert of the rows it missed, as one statement.
            payload = _tasks_json(state, touched, definition)
            writes.add(
                _INSERT_MISSING_TASKS,
                [execution.pk],
                ctes=_TASK_CTES,
                cte_params=[payload, execution.pk],
            )
        return
    if len(touched) > 1 and connection.vendor == "postgresql":
        _project_in_one(execution, state, touched, definition)
        return
    if len(touched) > BULK_FROM:
        _project_many(execution, state, touched, definition)
        return
    for node_id in touched:
        fields = task_fields(state.nodes[node_id])
        updated = Task.objects.filter(execution=execution, node_id=node_id).update(**fields)
        if not updated and definition is not None:
            kind = definition.node_for(node_id).type
            Task.objects.create(execution=execution, node_id=node_id, type=kind, **fields)


def _create_decided(
    execution: Execution,
    state: ExecutionState,
    touched: list[str],
    definition: Definition | None,
    writes: Writes | None = None,
) -> None:
    """A new execution's Task rows in one INSERT: the definition's nodes (the touched ones
    as decided, the others pending), then the touched nodes it does not name (map items),
    in the order create_tasks and then an update would have created them. `writes`:
    staged there (their ids, which no one reads, are not returned)."""
    definition = definition or definition_for(execution.version_id)
    ids = [node.id for node in definition.nodes]
    ids += [node_id for node_id in touched if node_id not in definition.by_id]
    decided = set(touched)
    rows = [
        _task_row(execution, definition, node_id, state if node_id in decided else None)
        for node_id in ids
    ]
    if writes is not None and len(rows) <= ROWS_IN_ONE:
        insert_rows(writes, rows, numbered=False)
    else:
        Task.objects.bulk_create(rows, batch_size=500)
    execution.tasks_unwritten = False


def _task_row(
    execution: Execution, definition: Definition, node_id: str, state: ExecutionState | None
) -> Task:
    """A new Task row: as `state` has the node, or pending (None)."""
    fields = task_fields(state.nodes[node_id]) if state is not None else {}
    return Task(
        execution=execution, node_id=node_id, type=definition.node_for(node_id).type, **fields
    )


#: Above this many nodes, one SELECT and a batched UPDATE beat an UPDATE per node.
BULK_FROM = 4

#: Every touched Task row in one statement (PostgreSQL): a unit that logs several facts
#: from the inbox (executions/kernel/inbox.py) touches as many nodes, each with its own times.
_UPDATE_FROM_JSON = sql(
    """
UPDATE {t} AS t SET
    {t.status} = v.status, {t.attempts} = v.attempts, {t.retry_count} = v.retry_count,
    {t.input} = NULLIF(v.input, 'null'::jsonb), {t.output} = NULLIF(v.output, 'null'::jsonb),
    {t.error} = NULLIF(v.error, 'null'::jsonb), {t.started_at} = v.started_at,
    {t.ended_at} = v.ended_at, {t.next_retry_at} = v.next_retry_at
FROM jsonb_to_recordset(%s::jsonb) AS v(
    node_id text, status text, attempts int, retry_count int, input jsonb, output jsonb,
    error jsonb, started_at timestamptz, ended_at timestamptz, next_retry_at timestamptz
)
WHERE t.{t.execution} = %s AND t.{t.node_id} = v.node_id
RETURNING t.{t.node_id}
""",
    t=Task,
)


#: _UPDATE_FROM_JSON as part of a unit's writes (kernel/writes.py): the rows it misses (map
#: items, at their first appearance; those whose type is known) are inserted with it.
_TASK_CTES = sql(
    """
task_rows AS (
    SELECT * FROM jsonb_to_recordset(%s::jsonb) AS v(
        node_id text, type text, status text, attempts int, retry_count int, input jsonb,
        output jsonb, error jsonb, started_at timestamptz, ended_at timestamptz,
        next_retry_at timestamptz
    )
), task_updated AS (
    UPDATE {t} AS t SET
        {t.status} = v.status, {t.attempts} = v.attempts, {t.retry_count} = v.retry_count,
        {t.input} = NULLIF(v.input, 'null'::jsonb), {t.output} = NULLIF(v.output, 'null'::jsonb),
        {t.error} = NULLIF(v.error, 'null'::jsonb), {t.started_at} = v.started_at,
        {t.ended_at} = v.ended_at, {t.next_retry_at} = v.next_retry_at
    FROM task_rows AS v
    WHERE t.{t.execution} = %s AND t.{t.node_id} = v.node_id
    RETURNING t.{t.node_id}
)
""",
    t=Task,
)
_INSERT_MISSING_TASKS = sql(
    """
INSERT INTO {t} ({t.execution}, {t.node_id}, {t.type}, {t.status}, {t.attempts},
    {t.retry_count}, {t.input}, {t.output}, {t.error}, {t.started_at}, {t.ended_at},
    {t.next_retry_at})
SELECT %s::uuid, v.node_id, v.type, v.status, v.attempts, v.retry_count,
    NULLIF(v.input, 'null'::jsonb), NULLIF(v.output, 'null'::jsonb),
    NULLIF(v.error, 'null'::jsonb), v.started_at, v.ended_at, v.next_retry_at
FROM task_rows AS v
WHERE v.type IS NOT NULL AND v.node_id NOT IN (SELECT {t.node_id} FROM task_updated)
ORDER BY v.node_id
""",
    t=Task,
)


def _tasks_json(state: ExecutionState, node_ids: list[str], definition: Definition | None) -> str:
    """The touched nodes' projections as _UPSERT_FROM_JSON takes them; each with its type
    where the definition names it (a row then missing is created)."""
    rows = []
    for node_id in node_ids:
        kind = definition.node_for(node_id).type if definition is not None else None
        rows.append({"node_id": node_id, "type": kind, **task_fields(state.nodes[node_id])})
    return as_json(rows)


def _project_in_one(
    execution: Execution, state: ExecutionState, node_ids: list[str], definition: Definition | None
) -> None:
    rows = [{"node_id": node_id, **task_fields(state.nodes[node_id])} for node_id in node_ids]
    # JSON null and SQL NULL both read back as None; NULLIF stores NULL, as Django does.
    payload = json.dumps(rows, default=_json_default)
    with connection.cursor() as cursor:
        cursor.execute(_UPDATE_FROM_JSON, [payload, execution.pk])
        updated = {node_id for (node_id,) in cursor.fetchall()}
    missing = [node_id for node_id in node_ids if node_id not in updated]
    if missing and definition is not None:  # map items, at their first appearance
        Task.objects.bulk_create(
            _task_row(execution, definition, node_id, state) for node_id in missing
        )


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _project_many(
    execution: Execution, state: ExecutionState, node_ids: list[str], definition: Definition | None
) -> None:
    """Nodes with identical projections (a fan-out's just-scheduled branches) share one
    UPDATE; Django's bulk_update builds a CASE per row and field, far slower than this."""
    groups: dict[str, tuple[dict[str, Any], list[str]]] = {}
    for node_id in node_ids:
        fields = task_fields(state.nodes[node_id])
        key = json.dumps(fields, sort_keys=True, default=str)
        groups.setdefault(key, (fields, []))[1].append(node_id)
    existing = set(
        Task.objects.filter(execution=execution, node_id__in=node_ids).values_list(
            "node_id", flat=True
        )
    )
    for fields, ids in groups.values():
        Task.objects.filter(execution=execution, node_id__in=ids).update(**fields)
    if definition is not None:
        Task.objects.bulk_create(
            [
                _task_row(execution, definition, node_id, state)
                for node_id in node_ids
                if node_id not in existing
            ],
            batch_size=500,
        )


def rebuild(execution: Execution, state: ExecutionState, definition: Definition) -> None:
    """Rewrite every projection of one execution from its folded log."""
    wanted = [n.id for n in definition.nodes]
    wanted += [node_id for node_id in state.nodes if node_id not in definition.by_id]
    Task.objects.filter(execution=execution).exclude(node_id__in=wanted).delete()
    existing = set(Task.objects.filter(execution=execution).values_list("node_id", flat=True))
    Task.objects.bulk_create(
        Task(execution=execution, node_id=node_id, type=definition.node_for(node_id).type)
        for node_id in wanted
        if node_id not in existing
    )
    for node_id in wanted:
        fields = task_fields(state.nodes.get(node_id) or NodeState(node_id))
        Task.objects.filter(execution=execution, node_id=node_id).update(**fields)
    if state.started_at is not None and execution.tags != state.tags:
        execution.tags = state.tags
        execution.save(update_fields=["tags"])
    project(execution, state, ())


def differences(
    execution: Execution, state: ExecutionState, *, tasks: Iterable[Task] | None = None
) -> list[str]:
    """Where the stored projection disagrees with the folded log (empty: they agree).
    `tasks`: the execution's Task rows, when the caller has read them already."""
    problems = []
    # Written with the row (they never change), recorded in workflow_started: an
    # execution that has not started yet has nothing to compare them with.
    if state.started_at is not None and execution.tags != state.tags:
        problems.append(f"execution.tags: stored {execution.tags!r}, log {state.tags!r}")
    for name, value in execution_fields(state).items():
        if getattr(execution, name) != value:
            problems.append(
                f"execution.{name}: stored {_shown(getattr(execution, name))}, log {_shown(value)}"
            )
    for task in Task.objects.filter(execution=execution) if tasks is None else tasks:
        node = state.nodes.get(task.node_id) or NodeState(task.node_id)
        for name, value in task_fields(node).items():
            if getattr(task, name) != value:
                problems.append(
                    f"task {task.node_id}.{name}: stored {_shown(getattr(task, name))}, "
                    f"log {_shown(value)}"
                )
    return problems


def _shown(value: Any) -> str:
    # A status is a StrEnum in the folded state and a plain str in the row: show both alike.
    return repr(value.value if isinstance(value, Enum) else value)
