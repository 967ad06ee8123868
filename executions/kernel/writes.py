"""A unit of work's writes at its commit, in one statement on PostgreSQL.

The events, the execution's projection and bookkeeping, the touched Task rows and the
metric deltas of a unit are independent writes to different tables. On PostgreSQL they go
out as one data-modifying WITH: one round trip, and statements built from the models'
names (executions/sqlnames.py) without the ORM on the hot path. Each sub-statement sees the
same snapshot and none reads another's rows, which none of these needs: every row they
touch is the execution's own, under its lock (kernel/lock.py). Elsewhere (SQLite) the
callers write through the ORM as before (`staged()` is None).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import connection

from executions.models import Event, Execution
from executions.sqlnames import sql


class Writes:
    """Statements staged by a unit's commit and sent together by `send`."""

    def __init__(self) -> None:
        self._parts: list[tuple[str, list[Any], str, list[Any]]] = []

    def add(
        self,
        statement: str,
        params: Sequence[Any],
        *,
        ctes: str = "",
        cte_params: Sequence[Any] = (),
    ) -> None:
        """Stage one INSERT or UPDATE (no RETURNING: nothing reads its rows back).
        `ctes`: named queries it reads ("name AS (...), ..."; a WITH may only be at the
        top), named apart from every other statement's, with their `cte_params`."""
        self._parts.append((ctes.strip(), list(cte_params), statement.strip(), list(params)))

    def send(self) -> None:
        """Everything staged, in one statement, then nothing staged."""
        parts, self._parts = self._parts, []
        if not parts:
            return
        if len(parts) == 1 and not parts[0][0]:
            statement, params = parts[0][2], parts[0][3]
        else:
            named = [ctes for ctes, _, _, _ in parts if ctes]
            named += [f"w{i} AS (\n{text}\n)" for i, (_, _, text, _) in enumerate(parts)]
            # Every sub-statement of a WITH runs to completion whether it is read or not.
            statement = "WITH " + ",\n".join(named) + "\nSELECT 1"
            params = [value for _, values, _, _ in parts for value in values]
            params += [value for _, _, _, values in parts for value in values]
        with connection.cursor() as cursor:
            cursor.execute(statement, params)


def staged() -> Writes | None:
    """A collector for a unit's writes where they can go out as one (PostgreSQL)."""
    return Writes() if connection.vendor == "postgresql" else None


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


def insert_events(writes: Writes, execution: Execution, rows: Sequence[Event]) -> None:
    payload = [
        {
            "seq": row.seq,
            "type": row.type,
            "node_id": row.node_id,
            "attempt": row.attempt,
            "data": row.data,
            "timestamp": row.timestamp.isoformat(),
            "source": row.source,
            "hash": row.hash,
        }
        for row in rows
    ]
    writes.add(_INSERT_EVENTS, [str(execution.pk), json.dumps(payload)])
