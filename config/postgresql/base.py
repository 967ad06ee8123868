"""Django's PostgreSQL backend with a health check (CONN_HEALTH_CHECKS) that asks the
server only when the connection's socket says something happened.

Django checks a reused connection before the first query of each request, and the
engine's worker hooks before each task (executions/worker/hooks.py), with a `SELECT 1`:
a round trip on every POST /executions and every run_task message, before anything else.
Between transactions nothing is owed to a healthy idle connection, so its socket has
nothing to read; a server that ended it (a restart, pg_terminate_backend, a proxy's idle
timeout) left its error and the close there. A readable socket (that, or a notice) is
checked with Django's `SELECT 1` as before, and so is a connection not idle, so every
connection Django's check closed is still closed. What neither check sees sooner is a
peer gone silent: Django's `SELECT 1` waits on it as the request's first query does.
"""

from __future__ import annotations

import select
from typing import Any

from django.db.backends.postgresql import base, operations
from psycopg import DataError
from psycopg.pq import TransactionStatus


class DatabaseOperations(operations.DatabaseOperations):
    def last_executed_query(self, cursor: Any, sql: str, params: Any) -> Any:
        server_bound = base.ServerBindingCursor  # type: ignore[attr-defined]
        binds_on_server = self.connection.features.uses_server_side_binding  # type: ignore[attr-defined]
        if isinstance(cursor, server_bound) and not binds_on_server:
            # The hot path's server-bound statements (executions/kernel/prepared.py) on a
            # connection whose other cursors bind on the client: the text Django logs (its
            # debug cursor, CaptureQueriesContext) is composed as for a server-bound one.
            try:
                return self.compose_sql(sql, params)
            except DataError:
                return None
        return super().last_executed_query(cursor, sql, params)


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations

    def get_connection_params(self) -> dict[str, Any]:
        params = super().get_connection_params()
        if "prepare_threshold" not in self.settings_dict["OPTIONS"]:
            # Django's default is None (nothing prepared, for poolers' sake); psycopg's is 5.
            # Only the hot path's server-bound statements are ever prepared
            # (executions/kernel/prepared.py): Django's client-bound cursors never are. A
            # host behind PgBouncer in transaction mode sets it to None in OPTIONS.
            params["prepare_threshold"] = 5
        return params

    def is_usable(self) -> bool:
        conn = self.connection
        if conn is None or conn.closed:
            return False
        if conn.info.transaction_status == TransactionStatus.IDLE and not _readable(conn.fileno()):
            return True
        return super().is_usable()


def _readable(fd: int) -> bool:
    """Whether the socket has something to read (or is closed) now, without waiting."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLPRI)
    return bool(poller.poll(0))
