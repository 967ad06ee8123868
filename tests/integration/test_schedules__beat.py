"""Schedules fired by real beat processes: an every-minute cron under two beats starts one
execution per fire time; beats stopped over missed fire times catch up as `catchup` says
when one is started again. (The downtime is made by moving the last fire back while the
beats are stopped, rather than by waiting minutes.)"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from executions.engine.statuses import EXECUTION_TERMINAL
from executions.models import Execution
from executions.schedules.models import Schedule, ScheduleFire
from executions.schedules.services import schedule_create, schedule_delete
from executions.supervisor import beat_argv
from tests.factories import make_version
from tests.integration.engine import Engine
from tests.waiting import eventually as wait_for

ECHO = {"nodes": [{"id": "a", "type": "function", "function": "std.echo", "input": 1}]}


def started(schedule: Schedule) -> list[ScheduleFire]:
    return list(
        ScheduleFire.objects.filter(schedule=schedule, execution__isnull=False).order_by(
            "fire_time"
        )
    )


def settled(schedule: Schedule) -> bool:
    ids = [fire.execution_id for fire in started(schedule)]
    active = Execution.objects.filter(pk__in=ids).exclude(status__in=EXECUTION_TERMINAL)
    return bool(ids) and not active.exists()


@pytest.fixture
def every_minute(live: Engine) -> Iterator[Schedule]:
    """An every-minute schedule, deleted at the end: else the session's beat would go on
    starting an execution a minute for the rest of the run."""
    schedule = schedule_create(
        workflow=make_version(ECHO).workflow, cron="* * * * *", overlap="allow",
        catchup="all", catchup_window_seconds=600,
    )  # fmt: skip
    yield schedule
    schedule_delete(schedule=Schedule.objects.get(pk=schedule.pk))


def test_two_beats_one_execution_per_fire_and_catchup_after_a_restart(
    live: Engine, every_minute: Schedule
) -> None:
    schedule = every_minute
    second = live.supervisor.start(
        live.supervisor.numbered("beat"),
        beat_argv(schedule=live.log_dir / "beat-schedule-2"),
        env=live.env,
    )
    try:
        # The next minute boundary: both beats send the schedule's message.
        first = wait_for(lambda: started(schedule), 90, "the first fire")[0]
        wait_for(lambda: settled(schedule), 90, "the first execution to end")
    finally:
        live.supervisor.stop(second)
        live.stop_beat()
    try:
        keys = Execution.objects.filter(engine_key__startswith=f"schedule:{schedule.pk}:")
        assert keys.count() == len(started(schedule)) == 1
        assert first.outcome == "started"
        assert first.execution_id is not None

        # Beat down for five minutes: the fires after the last one handled were missed.
        down_since = first.fire_time - timedelta(minutes=5)
        Schedule.objects.filter(pk=schedule.pk).update(last_fire_at=down_since)
        ScheduleFire.objects.filter(schedule=schedule).delete()
        Execution.objects.filter(pk=first.execution_id).update(engine_key=None)
        PeriodicTask.objects.filter(pk=schedule.periodic_task_id).update(last_run_at=down_since)
    finally:
        live.start_beat()  # fires the missed tick at once, on startup
    wait_for(lambda: len(started(schedule)) >= 5, 90, "the catch-up fires")
    wait_for(lambda: settled(schedule), 90, "the catch-up executions to end")
    times = [fire.fire_time for fire in started(schedule)]
    assert times == sorted(set(times))  # one each
    assert times[0] == down_since + timedelta(minutes=1)
    assert all(timezone.now() - t <= timedelta(seconds=600) for t in times)
    assert {b - a for a, b in itertools.pairwise(times)} == {timedelta(minutes=1)}
