"""The hot path's statements with their parameters bound on the server, and prepared.

Django's psycopg backend binds parameters on the client (a ClientCursor: the values are
quoted into the text), so nothing is ever prepared and PostgreSQL parses and plans each
statement afresh: about 0.75 ms of a chain hop's planning for its three statements
(docs/contributing/performance.md, "Chain hop"). Inside `bound()` Django's cursors for
the connection are psycopg's own server-binding Cursor (Django's ServerBindingCursor),
still wrapped by Django (its debug wrapper, execute_wrapper: CaptureQueriesContext counts
them as before). A statement whose text is fixed is prepared on its first execution
(`prepare=True`); one whose text varies with its shape (a unit's writes) is left to the
connection's `prepare_threshold` (prepared once the same text comes back that often).

Psycopg prepares nothing where the connection's `prepare_threshold` is None, whatever
`prepare` says: a host behind PgBouncer in transaction mode (before 1.21's
max_prepared_statements) sets OPTIONS {"prepare_threshold": None}, and these statements
are then bound on the server but never prepared. Django sets it to None unless OPTIONS
names it; this project's backend defaults it to psycopg's own 5 (config/postgresql/base.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection
from django.db.backends.postgresql.base import ServerBindingCursor  # type: ignore[attr-defined]

#: PostgreSQL's limit on a statement's parameters bound on the server (a 16-bit count);
#: a longer one (a unit's writes with very many rows) is bound on the client, as before.
MAX_PARAMS = 65535


class _Prepared(ServerBindingCursor):
    """A server-binding cursor that prepares what it executes (fixed texts only)."""

    def execute(self, query: Any, params: Any = None, *, prepare: bool | None = True,
                binary: bool | None = None) -> Any:  # fmt: skip
        return super().execute(query, params, prepare=prepare, binary=binary)


@contextmanager
def bound(*, fixed: bool = True, params: int = 0) -> Iterator[None]:
    """Within: the cursors Django opens on this thread's connection bind on the server,
    and `fixed` (the statement's text is the same every time) prepare it at once. Wrap
    one statement. Elsewhere than PostgreSQL, or past MAX_PARAMS, nothing changes."""
    if connection.vendor != "postgresql" or params > MAX_PARAMS:
        yield
        return
    connection.ensure_connection()
    raw = connection.connection
    previous = raw.cursor_factory
    raw.cursor_factory = _Prepared if fixed else ServerBindingCursor
    try:
        yield
    finally:
        raw.cursor_factory = previous
