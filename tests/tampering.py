"""Editing the event log as a database owner would: behind the ORM and, on PostgreSQL, with
the append-only trigger switched off for the moment (executions 0003). Tests only."""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Any

from django.db import connection

TRIGGER = "executions_event_append_only"


@contextmanager
def trigger_disabled():
    """The owner's way around the trigger; re-enabled however the block ends."""
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        # ALTER TABLE waits for no deferred foreign-key check of this transaction's inserts.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(f"ALTER TABLE executions_event DISABLE TRIGGER {TRIGGER}")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f"ALTER TABLE executions_event ENABLE TRIGGER {TRIGGER}")
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")


def db_id(execution_id: Any) -> str:
    """The execution id as the events table stores it (SQLite: 32 hex digits)."""
    return execution_id.hex if connection.vendor == "sqlite" else str(execution_id)


def raw_sql(sql: str, params: list[Any]) -> None:
    with trigger_disabled(), connection.cursor() as cursor:
        cursor.execute(sql, params)


def set_event_data(execution_id: Any, seq: int, data: Any) -> None:
    raw_sql(
        "UPDATE executions_event SET data = %s WHERE execution_id = %s AND seq = %s",
        [json.dumps(data), db_id(execution_id), seq],
    )
