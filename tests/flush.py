"""The flush that ends each transactional test, made to leave the live engine standing.

Django's TransactionTestCase (pytest-django's `transaction=True`, and every test using
`live_server`) ends each test with the `flush` command, which truncates every table. The
session's engine (tests/integration/engine.py: real worker and beat processes on the test
database) runs on through those tests, and keeps rows of its own there: the beat's entries
(the sweeper's among them) in django-celery-beat's tables, and the sweeper's record of its
last sweep (what /healthz and the admin read). Truncated under it, the beat has to write
its entries back (new rows), and the sweeper reads as never having run.

So the run's flush (`Command`, put in place of Django's by tests/conftest.py) keeps those
tables, and takes out of them only what tests wrote there: each schedule is deleted as the
product deletes one, its PeriodicTask and crontab with it, which also tells the running
beat to reload without them. Every other table is truncated, and post_migrate emitted, as
Django's flush does.

Not `available_apps`, TransactionTestCase's way of flushing fewer apps: it also takes the
apps left out out of the app registry for the whole test, and the admin pages the browser
tests open list django-celery-beat's models. (Nor `reset_sequences`, which would restart
the kept tables' sequences under their rows: no test here uses it.)

A flush empties the executions' tables too, under workers that may still be advancing one.
That is safe only while no test that leaves its rows to the engine (an integration test:
it commits and is never flushed) has run before it: `assert_flushes_come_first` holds the
run to that order, the one pytest-django sorts tests into (transactional ones before the
tests that use no pytest-django database).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.apps import apps
from django.core.management.color import no_style
from django.core.management.commands import flush
from django.core.management.sql import emit_post_migrate_signal
from django.db import connections
from django_celery_beat.models import PeriodicTask

from executions.models import SweeperState
from executions.schedules.models import Schedule
from executions.schedules.services import RUN_TASK, schedule_delete

#: pytest-django's fixtures that make a test transactional, as its marker's arguments do.
TRANSACTIONAL_FIXTURES = {"transactional_db", "live_server", "django_db_reset_sequences"}


def engine_tables() -> set[str]:
    """The tables of the rows the engine's processes write for themselves: the beat's
    schedule, and the sweeper's record."""
    beat = apps.get_app_config("django_celery_beat").get_models(include_auto_created=True)
    return {model._meta.db_table for model in beat} | {SweeperState._meta.db_table}


class Command(flush.Command):
    """`flush` without the engine's tables (TransactionTestCase calls it non-interactive)."""

    def handle(self, **options: Any) -> None:
        database = options["database"]
        connection = connections[database]
        for schedule in list(Schedule.objects.all()):  # one database here: the default
            schedule_delete(schedule=schedule)
        kept = engine_tables()
        tables = connection.introspection.django_table_names(
            only_existing=True, include_views=False
        )
        statements = connection.ops.sql_flush(
            no_style(),
            [table for table in tables if table not in kept],
            reset_sequences=options.get("reset_sequences", True),
            allow_cascade=options.get("allow_cascade", False),
        )
        connection.ops.execute_sql_flush(statements)
        if statements and not options.get("inhibit_post_migrate", False):
            emit_post_migrate_signal(options["verbosity"], options["interactive"], database)


# --- which tests flush, and the order they must run in ------------------------------


def flushes(item: pytest.Item) -> bool:
    """pytest-django runs the test as a TransactionTestCase: flushed at its end."""
    marker = item.get_closest_marker("django_db")
    fixtures = set(getattr(item, "fixturenames", ()))
    if marker is not None:
        given = dict(zip(("transaction", "reset_sequences"), marker.args, strict=False))
        if given.get("transaction") or marker.kwargs.get("transaction"):
            return True
        if given.get("reset_sequences") or marker.kwargs.get("reset_sequences"):
            return True
    return bool(fixtures & TRANSACTIONAL_FIXTURES)


def leaves_rows_to_the_engine(item: pytest.Item) -> bool:
    """The test commits rows for the engine's workers and leaves them (the integration
    tests): outside pytest-django's database handling, neither rolled back nor flushed."""
    fixtures = set(getattr(item, "fixturenames", ()))
    in_a_test_case = item.get_closest_marker("django_db") is not None or bool(
        fixtures & (TRANSACTIONAL_FIXTURES | {"db"})
    )
    return "engine" in fixtures and not in_a_test_case


def assert_flushes_come_first(items: list[pytest.Item]) -> None:
    flushing = [i for i, item in enumerate(items) if flushes(item)]
    if not flushing:
        return
    last = flushing[-1]
    early = [item.nodeid for item in items[:last] if leaves_rows_to_the_engine(item)]
    if early:
        raise pytest.UsageError(
            f"{items[last].nodeid} flushes every table at its end, and would run after "
            f"tests whose executions the live engine may still be advancing: {early[:5]}. "
            "Run transactional tests first (pytest-django's own order: keep it, or mark "
            "the later test otherwise)."
        )


# --- what the live engine must find after a flush ------------------------------------


def engine_rows() -> set[str]:
    """The engine's own rows: the beat's entries that no schedule owns (the sweeper,
    Celery's defaults), by id and name, and the sweeper's record, by name."""
    entries = PeriodicTask.objects.filter(workflow_schedule__isnull=True)
    rows = {f"beat entry {pk} {name}" for pk, name in entries.values_list("pk", "name")}
    return rows | {
        f"sweeper state {n}" for n in SweeperState.objects.values_list("name", flat=True)
    }


def assert_kept(before: set[str]) -> None:
    """After a flush: every row of the engine's from `before` is still there (the same
    rows, not ones written back since), and no beat entry a test's schedule had."""
    lost = before - engine_rows()
    assert not lost, (
        f"a transactional test's flush removed the live engine's rows {sorted(lost)} "
        "(tests/flush.py keeps their tables: is its flush the one that ran?)"
    )
    left = list(PeriodicTask.objects.filter(task=RUN_TASK).values_list("name", flat=True))
    assert left == [], f"the flush left the beat entries of deleted schedules: {left}"
