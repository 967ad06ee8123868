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

from django.db.backends.postgresql import base
from psycopg.pq import TransactionStatus


class DatabaseWrapper(base.DatabaseWrapper):
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
