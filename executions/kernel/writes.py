"""A unit of work's writes at its commit, in one statement on PostgreSQL.

The events, the execution's projection and bookkeeping, the touched Task rows and the
metric deltas of a unit are independent writes to different tables. On PostgreSQL they go
out as one data-modifying WITH: one round trip, and statements built from the models'
names (executions/sqlnames.py) without the ORM on the hot path. Each sub-statement sees the
same snapshot and none reads another's rows, which none of these needs: every row they
touch is the execution's own, under its lock (kernel/lock.py). An execution's first unit
(services/start.py) inserts the execution's row, its attempts and its Task rows in the same
statement (`insert_rows`): no one can see it before its commit, and the rows' foreign keys
are checked at the commit (Django's are deferred on PostgreSQL), so the order of the
sub-statements does not matter. Elsewhere (SQLite) the callers write through the ORM as
before (`staged()` is None).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import cache
from typing import Any

from django.db import connection
from django.db.models import Field, Model

from executions.kernel import prepared
from executions.models import Event, Execution
from executions.sqlnames import sql


class Writes:
    """Statements staged by a unit's commit and sent together by `send`."""

    def __init__(self) -> None:
        self._parts: list[tuple[str, list[Any], str, list[Any]]] = []
        #: The one staged statement whose RETURNING rows a caller reads, and who reads them.
        self._returning: tuple[int, Callable[[list[tuple[Any, ...]]], None]] | None = None

    def add(
        self,
        statement: str,
        params: Sequence[Any],
        *,
        ctes: str = "",
        cte_params: Sequence[Any] = (),
        returning: Callable[[list[tuple[Any, ...]]], None] | None = None,
    ) -> None:
        """Stage one INSERT or UPDATE. `ctes`: named queries it reads ("name AS (...),
        ..."; a WITH may only be at the top), named apart from every other statement's,
        with their `cte_params`. `returning`: the statement ends in RETURNING, and this
        is called with its rows once sent (one such statement per send)."""
        if returning is not None:
            if self._returning is not None:
                raise ValueError("one statement of a unit's writes returns rows, not two")
            self._returning = (len(self._parts), returning)
        self._parts.append((ctes.strip(), list(cte_params), statement.strip(), list(params)))

    def send(self) -> None:
        """Everything staged, in one statement, then nothing staged."""
        parts, self._parts = self._parts, []
        returning, self._returning = self._returning, None
        if not parts:
            return
        if len(parts) == 1 and not parts[0][0]:
            statement, params = parts[0][2], parts[0][3]
        else:
            named = [ctes for ctes, _, _, _ in parts if ctes]
            named += [f"w{i} AS (\n{text}\n)" for i, (_, _, text, _) in enumerate(parts)]
            # Every sub-statement of a WITH runs to completion whether it is read or not.
            read = f"SELECT * FROM w{returning[0]}" if returning is not None else "SELECT 1"
            statement = "WITH " + ",\n".join(named) + "\n" + read
            params = [value for _, values, _, _ in parts for value in values]
            params += [value for _, _, _, values in parts for value in values]
        # Server-bound; prepared once its text (a unit's shape: a chain hop's is the same
        # every hop) comes back prepare_threshold times.
        bound = prepared.bound(fixed=False, params=len(params))
        with bound, connection.cursor() as cursor:
            cursor.execute(statement, params)
            if returning is not None:
                returning[1](cursor.fetchall())


def staged() -> Writes | None:
    """A collector for a unit's writes where they can go out as one (PostgreSQL)."""
    return Writes() if connection.vendor == "postgresql" else None


#: At most this many rows go into a unit's statement through `insert_rows` (the batch
#: size the ORM's inserts used): more (a wide fan-out's start) are bulk-created, in
#: batches, as before, keeping the statement's parameters within PostgreSQL's limit
#: where a host binds them server-side.
ROWS_IN_ONE = 500


@cache
def _insert_statement(model: type[Model]) -> tuple[str, str, tuple[Field, ...]]:
    """INSERT INTO the model's table, its columns, and the fields that fill them: every
    concrete one but a primary key the database numbers (returned instead)."""
    fields = tuple(
        f
        for f in model._meta.local_concrete_fields
        # An AutoField's db_returning (django-stubs does not know it).
        if not f.generated and not (f.primary_key and getattr(f, "db_returning", False))
    )
    q = connection.ops.quote_name
    columns = ", ".join(q(f.column) for f in fields)
    returned = model._meta.pk
    returns = "" if returned in fields else f" RETURNING {q(returned.column)}"
    return f"INSERT INTO {q(model._meta.db_table)} ({columns}) VALUES ", returns, fields


def insert_rows(writes: Writes, rows: Sequence[Model], *, numbered: bool = True) -> None:
    """Stage new model instances of one model as one INSERT, each value prepared as
    Django's own INSERT prepares it (pre_save, get_db_prep_save). Each instance reads as
    saved from here on. A primary key the database numbers is set on each once sent (in
    the order of `rows`, as Django's bulk_create sets them), unless not `numbered` (no one
    reads it: one statement of a unit's writes returns rows). No save signals (nothing
    listens for these models' ones)."""
    if not rows:
        return
    head, returns, fields = _insert_statement(type(rows[0]))
    returns = returns if numbered else ""
    one = "(" + ", ".join(["%s"] * len(fields)) + ")"
    params = [f.get_db_prep_save(f.pre_save(row, True), connection) for row in rows for f in fields]
    for row in rows:
        row._state.adding, row._state.db = False, connection.alias

    def number(ids: list[tuple[Any, ...]]) -> None:
        for row, (pk,) in zip(rows, ids, strict=True):
            row.pk = pk

    statement = head + ", ".join([one] * len(rows)) + returns
    writes.add(statement, params, returning=number if returns else None)


def as_json(value: Any) -> str:
    """A JSON column's value as its parameter (datetimes as ISO text, for timestamptz)."""
    return json.dumps(value, default=_iso)


def _iso(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


#: The unit's new events from one JSON array. The event's own data is never passed
#: through _iso: a datetime in it would not survive the hash chain's canonical form.
_INSERT_EVENTS = sql(
    """
INSERT INTO {e} ({e.execution}, {e.seq}, {e.type}, {e.node_id}, {e.attempt}, {e.data},
    {e.timestamp}, {e.source}, {e.hash})
SELECT %s::uuid, v.seq, v.type, v.node_id, v.attempt, v.data, v.timestamp, v.source, v.hash
FROM jsonb_to_recordset(%s::jsonb) AS v(
    seq int, type text, node_id text, attempt int, data jsonb, timestamp timestamptz,
    source text, hash text
)
ORDER BY v.seq
""",
    e=Event,
)


#: A new event's columns but its execution, by field name (seq, type, node_id, attempt,
#: data, timestamp, source, hash): what a unit of work stages (kernel/unit.py).
EventRow = dict[str, Any]


def insert_events(writes: Writes, execution: Execution, rows: Sequence[EventRow]) -> None:
    payload = [{**row, "timestamp": row["timestamp"].isoformat()} for row in rows]
    writes.add(_INSERT_EVENTS, [str(execution.pk), json.dumps(payload)])
