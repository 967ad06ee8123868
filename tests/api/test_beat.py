"""Beat keeps the engine's own periodic entries (the sweeper) whatever happens to
django-celery-beat's rows, read through a real scheduler instance on the test database."""

from __future__ import annotations

import pytest
from celery.signals import beat_init
from django.contrib.auth import get_user_model
from django.test import Client
from django_celery_beat.models import IntervalSchedule, PeriodicTask, PeriodicTasks
from django_celery_beat.schedulers import DatabaseScheduler

from config.celery import app
from executions.beat import SWEEP_TASK, SWEEPER_ENTRY, EngineScheduler

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _keep_the_test_connection(monkeypatch) -> None:
    """The scheduler closes connections that are not in autocommit, as beat should; in a
    test that is the test's own transaction."""
    monkeypatch.setattr("django_celery_beat.schedulers.close_old_connections", lambda: None)


def scheduler(cls: type[DatabaseScheduler] = EngineScheduler) -> DatabaseScheduler:
    # lazy: no setup_schedule() in the constructor; the test reads the schedule itself.
    made = cls(app=app, lazy=True)
    made._finalize.cancel()  # its sync at garbage collection would outlive the test
    return made


def sweeper_row() -> PeriodicTask:
    return PeriodicTask.objects.select_related("interval").get(name=SWEEPER_ENTRY)


def test_a_deleted_sweeper_row_is_written_back_when_beat_reads_its_table() -> None:
    beat = scheduler()
    assert SWEEPER_ENTRY in beat.all_as_schedule()
    sweeper_row().delete()
    assert not PeriodicTask.objects.filter(name=SWEEPER_ENTRY).exists()

    schedule = beat.all_as_schedule()
    assert schedule[SWEEPER_ENTRY].task == SWEEP_TASK
    row = sweeper_row()
    assert row.enabled
    assert (row.interval.every, row.interval.period) == (1, IntervalSchedule.SECONDS)


def test_a_row_whose_schedule_is_gone_is_skipped_and_beat_keeps_the_sweeper() -> None:
    """A row left with no interval, crontab, solar or clocked schedule (its schedule
    deleted under it) made django-celery-beat raise AttributeError and beat exit: the
    sweeper stopped for every execution."""
    every = IntervalSchedule.objects.create(every=60, period=IntervalSchedule.SECONDS)
    orphan = PeriodicTask.objects.create(name="orphan", task="x.y", interval=every)
    PeriodicTask.objects.filter(pk=orphan.pk).update(interval=None)

    schedule = scheduler().all_as_schedule()
    assert "orphan" not in schedule
    assert schedule[SWEEPER_ENTRY].task == SWEEP_TASK


def test_a_disabled_or_edited_sweeper_row_is_put_back_as_the_engine_defines_it() -> None:
    beat = scheduler()
    beat.all_as_schedule()
    row = sweeper_row()
    row.enabled = False
    row.interval = IntervalSchedule.objects.create(every=3600, period=IntervalSchedule.SECONDS)
    row.task = "some.other.task"
    row.save()

    schedule = beat.all_as_schedule()
    assert SWEEPER_ENTRY in schedule
    row = sweeper_row()
    assert row.enabled
    assert row.task == SWEEP_TASK
    assert row.interval.every == 1


def test_an_intact_row_is_not_written_again() -> None:
    """A write marks beat's schedule changed: writing every read would reload every tick."""
    beat = scheduler()
    beat.all_as_schedule()
    changed = PeriodicTasks.last_change()
    written = sweeper_row().date_changed
    beat.all_as_schedule()
    assert PeriodicTasks.last_change() == changed
    assert sweeper_row().date_changed == written


def test_after_a_flush_of_beat_s_tables_the_sweeper_comes_back() -> None:
    beat = scheduler()
    beat.all_as_schedule()
    # What `manage.py flush` does to them: the rows and the change marker, no signals.
    PeriodicTask.objects.all()._raw_delete(PeriodicTask.objects.db)
    PeriodicTasks.objects.all()._raw_delete(PeriodicTasks.objects.db)
    IntervalSchedule.objects.all()._raw_delete(IntervalSchedule.objects.db)

    assert SWEEPER_ENTRY in beat.all_as_schedule()
    assert sweeper_row().enabled


def test_the_stock_database_scheduler_becomes_the_engine_s_at_beat_init() -> None:
    """A host runs `--scheduler django_celery_beat.schedulers:DatabaseScheduler` with no
    engine setting: at beat_init the sweeper is in its schedule."""
    PeriodicTask.objects.filter(name=SWEEPER_ENTRY).delete()
    stock = scheduler(DatabaseScheduler)
    assert SWEEPER_ENTRY not in stock.all_as_schedule()

    class Service:  # what beat_init is sent with: celery.beat.Service
        scheduler = stock

    beat_init.send(sender=Service())
    assert isinstance(stock, EngineScheduler)
    assert SWEEPER_ENTRY in (stock._schedule or {})
    assert sweeper_row().enabled


def test_the_admin_does_not_list_the_engine_s_entries(admin_user) -> None:
    beat = scheduler()
    beat.all_as_schedule()
    PeriodicTask.objects.create(
        name="someone-else",
        task="x.y",
        interval=IntervalSchedule.objects.create(every=60, period=IntervalSchedule.SECONDS),
    )
    client = Client()
    client.force_login(admin_user)
    page = client.get("/admin/django_celery_beat/periodictask/")
    assert page.status_code == 200
    assert b"someone-else" in page.content
    assert SWEEPER_ENTRY.encode() not in page.content
    change = client.get(f"/admin/django_celery_beat/periodictask/{sweeper_row().pk}/change/")
    # The admin's answer for a row outside its queryset: back to the list, "doesn't exist".
    assert change.status_code == 302
    assert get_user_model().objects.filter(is_superuser=True).exists()
