"""A worker keeps its database connection from one task to the next (Celery's Django fixup
would open a new one for every task: a new PostgreSQL backend per attempt), and still
drops one Django would drop (config/celery.py, settings.CELERY_DB_REUSE_MAX)."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.factories import start
from tests.integration.engine import Engine

ONE_NODE = {"nodes": [{"id": "only", "type": "function", "function": "std.noop"}]}

postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="reads pg_stat_activity (PostgreSQL)"
)


def _other_backends() -> dict[int, tuple[float, float]]:
    """The other sessions on this database: pid -> (backend_start, state_change), epoch s."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, extract(epoch FROM backend_start), extract(epoch FROM state_change)"
            " FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
        )
        return {pid: (float(began), float(changed or 0)) for pid, began, changed in cursor}


def _now() -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT extract(epoch FROM clock_timestamp())")
        return float(cursor.fetchone()[0])


@postgres_only
def test_a_worker_reuses_its_database_connection_across_tasks(live: Engine) -> None:
    live.wait(start(ONE_NODE).pk)  # both pool processes have run tasks by now (sweeps too)
    since = _now()
    for _ in range(6):
        assert live.wait(start(ONE_NODE).pk).status == "succeeded"
    reused = {
        pid
        for pid, (began, changed) in _other_backends().items()
        if began < since < changed  # opened before these executions, used during them
    }
    assert reused, f"no worker connection outlived a task: {_other_backends()} (since {since})"
