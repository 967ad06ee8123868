"""The PostgreSQL health check (config/postgresql/base.py): a quiet idle connection is
reused with no SELECT 1 (before every request and every worker task, pinned here), and
every connection Django's own check would close is still closed."""

from __future__ import annotations

import select
from typing import Any, cast

import psycopg
import pytest
from django.db import close_old_connections, connection, transaction

from executions.worker.hooks import close_stale_connections

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's backend"),
]


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the health check sends: it bypasses Django's cursor (and its query capture)."""
    connection.ensure_connection()
    sent: list[str] = []
    real = connection.connection.cursor

    def cursor(*args: Any, **kwargs: Any) -> Any:
        sent.append("cursor")
        return real(*args, **kwargs)

    monkeypatch.setattr(connection.connection, "cursor", cursor)
    return sent


def test_a_quiet_idle_connection_is_reused_with_no_statement(statements: list[str]) -> None:
    assert connection.is_usable()
    assert statements == []


def test_a_task_checks_its_connection_with_no_statement(statements: list[str]) -> None:
    # What a worker does around each task, and Django around each request: the next use
    # is health-checked (CONN_HEALTH_CHECKS), with no round trip while the socket is quiet.
    close_stale_connections()
    close_old_connections()
    wrapper = cast(Any, connection)  # the stubs know no health_check_done
    assert not wrapper.health_check_done
    connection.close_if_health_check_failed()
    assert wrapper.health_check_done
    assert connection.connection is not None
    assert statements == []


def test_inside_a_transaction_it_asks_the_server(statements: list[str]) -> None:
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")  # psycopg begins the transaction with it
        statements.clear()
        assert connection.is_usable()
        assert statements == ["cursor"]


def test_a_connection_the_server_ended_is_closed_and_replaced() -> None:
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    with psycopg.connect(**_params(), autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    # The server's error and close reach the socket; wait for them, not a fixed time.
    assert select.select([connection.connection.fileno()], [], [], 10)[0]
    assert not connection.is_usable()
    close_old_connections()
    connection.close_if_health_check_failed()
    assert connection.connection is None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != pid


def _params() -> dict[str, Any]:
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    params.pop("prepare_threshold", None)
    return params
