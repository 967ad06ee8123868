"""Reads that see one committed state of the database while worker processes write to it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction


@contextmanager
def one_snapshot() -> Iterator[None]:
    """Every read inside sees the database as its first read did.

    PostgreSQL: a REPEATABLE READ transaction (READ COMMITTED, the default, takes a new
    snapshot per statement). Set as the session's default for this one transaction, not
    with SET TRANSACTION: Django's connection health check may run a query first, after
    which SET TRANSACTION is refused. SQLite: any transaction (in WAL mode a reader keeps
    its snapshot to the end). Inside a transaction already open (a rolled-back test's),
    that one: what the test wrote there, only its own connection can change.
    """
    if connection.in_atomic_block or connection.vendor != "postgresql":
        with transaction.atomic():
            yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    try:
        with transaction.atomic():
            yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET default_transaction_isolation")
