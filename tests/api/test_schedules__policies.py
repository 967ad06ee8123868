"""Schedules' catch-up, overlap and PATCH, with an injected clock: the
fire times handled and what came of each, one per (schedule, fire time)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from celery.signals import before_task_publish
from django.db import connection
from django_celery_beat.models import PeriodicTask

from executions.engine.statuses import ExecutionStatus
from executions.models import Execution
from executions.schedules.models import Schedule, ScheduleFire
from executions.schedules.services import schedule_create, schedule_release, schedule_run
from executions.schedules.tasks import release_schedule
from executions.services.control import execution_cancel
from tests.factories import make_version

pytestmark = pytest.mark.django_db

ECHO = {"nodes": [{"id": "a", "type": "function", "function": "std.echo"}]}
T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


@pytest.fixture
def workflow():
    return make_version(ECHO, name="every-five").workflow


def every_five(workflow, **options) -> Schedule:
    schedule = schedule_create(workflow=workflow, cron="*/5 * * * *", **options)
    Schedule.objects.filter(pk=schedule.pk).update(last_fire_at=T0)
    return schedule


def fires(schedule: Schedule) -> list[tuple[str, str]]:
    rows = ScheduleFire.objects.filter(schedule=schedule).order_by("fire_time")
    return [(f"{row.fire_time:%H:%M}", row.outcome) for row in rows]


def run(schedule: Schedule, at: datetime) -> Execution | None:
    return schedule_run(schedule_id=str(schedule.pk), now=at)


def end(execution: Execution | None) -> None:
    """No workers here: cancelling ends it through the engine at once."""
    assert execution is not None
    execution_cancel(execution_id=execution.pk, by="test")
    execution.refresh_from_db()
    assert execution.status == ExecutionStatus.CANCELLED


@pytest.mark.parametrize(
    ("catchup", "window", "at_minute", "expected"),
    [
        # Beat was down from 10:00 to 10:30: six fire times were missed.
        ("last", 3600, 30, ["10:30"]),
        ("all", 1000, 30, ["10:15", "10:20", "10:25", "10:30"]),
        ("all", 3600, 30, ["10:05", "10:10", "10:15", "10:20", "10:25", "10:30"]),
        ("none", 3600, 30, ["10:30"]),  # on time: the current fire is not a catch-up
        ("none", 3600, 33, []),  # back at 10:33: 10:30 is past, nothing runs
        ("last", 3600, 33, ["10:30"]),
    ],
)
def test_catchup_after_beat_was_down(workflow, catchup, window, at_minute, expected) -> None:
    schedule = every_five(workflow, catchup=catchup, catchup_window_seconds=window, overlap="allow")
    run(schedule, T0 + timedelta(minutes=at_minute, seconds=2))
    assert [time for time, _ in fires(schedule)] == expected
    assert Execution.objects.count() == len(expected)
    schedule.refresh_from_db()
    assert schedule.last_fire_at == T0 + timedelta(minutes=30)  # passed over, not redone
    run(schedule, T0 + timedelta(minutes=at_minute, seconds=9))  # a second beat's message
    assert Execution.objects.count() == len(expected)


def test_overlap_skip_is_the_default(workflow) -> None:
    schedule = every_five(workflow)
    first = run(schedule, T0 + timedelta(minutes=5))
    assert run(schedule, T0 + timedelta(minutes=10)) is None
    end(first)
    assert run(schedule, T0 + timedelta(minutes=15)) is not None
    assert fires(schedule) == [("10:05", "started"), ("10:10", "skipped"), ("10:15", "started")]


def test_overlap_buffer_one_keeps_one_fire_for_when_the_running_one_ends(workflow) -> None:
    schedule = every_five(workflow, overlap="buffer_one")
    first = run(schedule, T0 + timedelta(minutes=5))
    run(schedule, T0 + timedelta(minutes=10))
    run(schedule, T0 + timedelta(minutes=15))
    assert fires(schedule) == [("10:05", "started"), ("10:10", "buffered"), ("10:15", "skipped")]
    assert schedule_release(schedule_id=str(schedule.pk)) is None  # 10:05 still runs
    end(first)
    released = schedule_release(schedule_id=str(schedule.pk))
    assert released is not None
    assert (
        released.engine_key
        == f"schedule:{schedule.pk}:{T0 + timedelta(minutes=10):%Y-%m-%dT%H:%M:%S+00:00}"
    )
    assert fires(schedule)[1] == ("10:10", "started")


@pytest.fixture
def published() -> Iterator[list[tuple[str, str, str]]]:
    """(task name, routing key, args) of every message handed to the broker meanwhile."""
    sent: list[tuple[str, str, str]] = []

    def capture(headers: dict[str, Any], routing_key: str, **_: Any) -> None:
        sent.append((headers["task"], routing_key, headers["argsrepr"]))

    before_task_publish.connect(capture, weak=False)
    try:
        yield sent
    finally:
        before_task_publish.disconnect(capture)


def test_an_ended_execution_sends_its_schedule_the_release_after_commit(
    workflow, published: list[tuple[str, str, str]], django_capture_on_commit_callbacks
) -> None:
    schedule = every_five(workflow, overlap="buffer_one")
    first = run(schedule, T0 + timedelta(minutes=5))
    run(schedule, T0 + timedelta(minutes=10))  # buffered while the first runs
    published.clear()
    with django_capture_on_commit_callbacks() as after_commit:
        end(first)
    assert published == []  # nothing leaves before the commit
    for callback in after_commit:
        callback()
    released = [message for message in published if message[0] == release_schedule.name]
    assert released == [
        ("executions.schedules.tasks.release_schedule", "orchestrator", f"('{schedule.pk}',)")
    ]
    # What a worker does with it: the buffered fire starts.
    assert release_schedule(str(schedule.pk)) is not None
    assert fires(schedule) == [("10:05", "started"), ("10:10", "started")]


def test_overlap_cancel_other_cancels_the_running_one(workflow) -> None:
    schedule = every_five(workflow, overlap="cancel_other")
    first = run(schedule, T0 + timedelta(minutes=5))
    second = run(schedule, T0 + timedelta(minutes=10))
    assert first is not None
    assert second is not None
    first.refresh_from_db()
    assert first.status in (ExecutionStatus.CANCELLING, ExecutionStatus.CANCELLED)
    assert first.events.filter(type="workflow_cancel_requested").exists()
    assert fires(schedule) == [("10:05", "started"), ("10:10", "started")]


@pytest.mark.django_db(transaction=True)
def test_two_beats_firing_at_once_start_one_execution(workflow, django_db_blocker) -> None:
    schedule = every_five(workflow, overlap="allow")
    barrier = threading.Barrier(2)
    results: list[object] = []

    def beat() -> None:
        with django_db_blocker.unblock():
            barrier.wait()
            results.append(run(schedule, T0 + timedelta(minutes=5, seconds=1)))
            connection.close()

    threads = [threading.Thread(target=beat) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 2
    assert Execution.objects.count() == 1
    assert fires(schedule) == [("10:05", "started")]


def test_patch_changes_cron_input_and_policies(api, workflow) -> None:
    schedule = every_five(workflow)
    body = {"cron": "0 * * * *", "input": {"n": 2}, "overlap": "buffer_one", "catchup": "all"}
    response = api.patch(f"/schedules/{schedule.pk}", body, format="json")
    assert response.status_code == 200, response.content
    shown = response.json()
    assert {k: shown[k] for k in body} == body
    task = PeriodicTask.objects.get(pk=schedule.periodic_task_id)
    assert (task.crontab.minute, task.crontab.hour) == ("0", "*")
    bad = api.patch(f"/schedules/{schedule.pk}", {"cron": "every day"}, format="json")
    assert bad.status_code == 400
    assert "cron" in bad.json()
    assert (
        api.patch(f"/schedules/{schedule.pk}", {"overlap": "queue"}, format="json").status_code
        == 400
    )
