"""The event log's guard on PostgreSQL stays: only the purge's own DELETE of an ended
execution's events passes the trigger; a plain DELETE, any UPDATE, and a DELETE of a
running execution's events are refused, whatever the transaction set."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from executions.models import Event, Execution
from executions.services.control import execution_cancel
from tests.factories import start

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif("connection.vendor != 'postgresql'"),
]

WAIT = {"nodes": [{"id": "review", "type": "approval"}]}
OPEN = "SELECT set_config('executions.purge', 'on', true)"
DELETE = "DELETE FROM executions_event WHERE execution_id = %s"
UPDATE = "UPDATE executions_event SET data = '{}' WHERE execution_id = %s"


def log_of(execution: Execution) -> list[tuple]:
    return list(Event.objects.filter(execution=execution).values_list("seq", "data", "hash"))


def refused(execution: Execution, *statements: str) -> None:
    before = log_of(execution)
    assert before
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        _run(cursor, statements, execution)
    assert log_of(execution) == before


def _run(cursor, statements: tuple[str, ...], execution: Execution) -> None:
    for sql in statements:
        cursor.execute(sql, [str(execution.pk)] if "%s" in sql else [])


def test_a_plain_delete_of_an_ended_execution_s_event_is_refused() -> None:
    ended = execution_cancel(execution_id=start(WAIT).pk)
    refused(ended, DELETE)
    refused(ended, "DELETE FROM executions_event WHERE id = (SELECT min(id) FROM executions_event)")


def test_an_update_is_refused_even_with_the_purge_s_setting() -> None:
    ended = execution_cancel(execution_id=start(WAIT).pk)
    refused(ended, OPEN, UPDATE)


def test_the_purge_s_setting_does_not_open_a_running_execution_s_log() -> None:
    running = start(WAIT)
    refused(running, OPEN, DELETE)


@pytest.mark.django_db(transaction=True)
def test_the_setting_lasts_only_for_its_transaction() -> None:
    ended = execution_cancel(execution_id=start(WAIT).pk)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(OPEN)
    refused(ended, DELETE)


def test_with_the_setting_an_ended_execution_s_events_can_be_deleted() -> None:
    """What the purge relies on (inside its batch, which deletes the rest with them)."""
    ended = execution_cancel(execution_id=start(WAIT).pk)
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(OPEN)
            cursor.execute(DELETE, [str(ended.pk)])
        assert not Event.objects.filter(execution=ended).exists()
        transaction.set_rollback(True)
    assert log_of(ended)
