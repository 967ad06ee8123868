"""A purge never waits for an execution's lock, and gives up on any other row lock rather
than hold up the work that holds it: what another transaction holds is left for the next
run, and nothing of it is deleted."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection, connections, transaction

from executions.models import Attempt, Execution, Tombstone
from tests.api.test_purge import ECHO, purge, run_all
from tests.factories import start

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif("connection.vendor != 'postgresql'"),
]


@contextmanager
def held(sql: str, *params: Any) -> Iterator[None]:
    """`sql` (a SELECT ... FOR UPDATE) run by another connection, its locks held until
    the block ends."""
    taken, release = threading.Event(), threading.Event()
    failed: list[BaseException] = []

    def hold() -> None:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(sql, params)
                taken.set()
                release.wait(60)
        except BaseException as exc:  # reported to the test below
            failed.append(exc)
            taken.set()
        finally:
            connections.close_all()

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert taken.wait(30), "the other transaction never took its lock"
    assert not failed, failed
    try:
        yield
    finally:
        release.set()
        thread.join(30)


def test_an_execution_another_transaction_holds_is_left_for_the_next_run() -> None:
    busy, free = run_all(start(ECHO, {"n": 1})), run_all(start(ECHO, {"n": 2}))
    with held("SELECT id FROM executions_execution WHERE id = %s FOR UPDATE", busy.pk):
        said = purge()
    assert "purged 1 executions" in said
    assert "left 1 trees for a later run" in said
    assert Execution.objects.get(pk=busy.pk).last_seq == busy.last_seq
    assert Tombstone.objects.filter(pk=free.pk).exists()
    assert "purged 1 executions" in purge()
    assert Tombstone.objects.filter(pk=busy.pk).exists()


def test_a_batch_that_would_wait_for_another_row_lock_gives_up_and_deletes_nothing() -> None:
    execution = run_all(start(ECHO, {"n": 1}))
    attempt = Attempt.objects.get(execution=execution)
    with held("SELECT id FROM executions_attempt WHERE id = %s FOR UPDATE", attempt.pk):
        said = purge()
    assert "purged 0 executions" in said
    assert "left 1 trees" in said
    assert not Tombstone.objects.filter(pk=execution.pk).exists()
    assert Attempt.objects.filter(pk=attempt.pk).exists()
    assert "purged 1 executions" in purge()
