"""Schedules' fire times on the real engine (worker and beat processes, the database and
the broker): a backfill of ten fire times runs ten executions, each with its own fire
time in its input, and a repeat starts nothing; a fire the beat makes with jitter begins
at the fire time plus the delay the pure function gives, and the same fire gets the same
delay again."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from executions.engine.events import EventType
from executions.models import Event, Execution, Timer, TimerKind
from executions.schedules.backfill import schedule_backfill
from executions.schedules.models import Schedule, ScheduleFire
from executions.schedules.policy import fire_delay, fire_time_text
from executions.schedules.services import schedule_create, schedule_delete
from tests.factories import make_version
from tests.integration.engine import Engine
from tests.waiting import eventually
from workflows import clock

pytestmark = pytest.mark.integration

ECHO = {
    "nodes": [{"id": "a", "type": "function", "function": "std.echo", "input": "{{ input }}"}],
    "output": "{{ nodes.a.output }}",
}
STAMPED = {"fired": "{{ schedule.fire_time }}"}


@pytest.fixture
def schedules(live: Engine) -> Iterator[list[Schedule]]:
    """Schedules made by the test, deleted at its end: the session's beat would otherwise
    go on firing them."""
    made: list[Schedule] = []
    yield made
    for schedule in made:
        schedule_delete(schedule=Schedule.objects.get(pk=schedule.pk))


def test_a_backfill_of_ten_fire_times_and_its_repeat(
    live: Engine, schedules: list[Schedule]
) -> None:
    workflow = make_version(ECHO).workflow
    schedule = schedule_create(workflow=workflow, cron="0 * * * *", input=STAMPED)
    schedules.append(schedule)
    end = clock.now().replace(minute=0, second=0, microsecond=0) - timedelta(days=1)
    start = end - timedelta(hours=9)

    done = schedule_backfill(schedule=schedule, start=start, end=end)
    assert len(done.started) == 10
    assert done.already_ran == []
    for fire in done.started:
        assert fire.execution is not None
        ended = live.wait(fire.execution.pk)  # checks --verify and the hash chain too
        assert ended.status == "succeeded"
        assert ended.output == {"fired": fire_time_text(fire.fire_time)}
    times = sorted(fire.fire_time for fire in done.started)
    assert times == [start + timedelta(hours=n) for n in range(10)]

    again = schedule_backfill(schedule=schedule, start=start, end=end)
    assert again.started == []
    assert {fire.execution_id for fire in again.already_ran} == {
        fire.execution_id for fire in done.started
    }
    keys = Execution.objects.filter(engine_key__startswith=f"schedule:{schedule.pk}:")
    assert keys.count() == 10


def test_jitter_delays_the_beats_fire_by_the_same_amount_every_time(
    live: Engine, schedules: list[Schedule]
) -> None:
    workflow = make_version(ECHO).workflow
    schedule = schedule_create(
        workflow=workflow, cron="* * * * *", input=STAMPED, jitter_seconds=20, overlap="allow"
    )
    schedules.append(schedule)

    def fired() -> ScheduleFire | None:
        return ScheduleFire.objects.filter(schedule=schedule, execution__isnull=False).first()

    fire = eventually(fired, 90, "the beat's first fire")
    assert fire.execution_id is not None
    execution = live.wait(fire.execution_id, timeout=90)
    delay = fire_delay(str(schedule.pk), fire.fire_time, 20)
    assert fire.start_at == fire.fire_time + delay
    assert execution.output == {"fired": fire_time_text(fire.fire_time)}
    started = Event.objects.get(execution=execution, type=EventType.WORKFLOW_STARTED)
    assert started.timestamp >= fire.start_at
    timers = Timer.objects.filter(execution=execution, kind=TimerKind.START)
    # Begun by its start timer, due at that moment, unless the beat's message came later.
    assert [timer.due_at for timer in timers] in ([fire.start_at], [])
    # Handled again (a backfill over it, as a replayed beat message would): no new start.
    again = schedule_backfill(schedule=schedule, start=fire.fire_time, end=fire.fire_time)
    assert again.started == []
    assert [f.execution_id for f in again.already_ran] == [execution.pk]
    assert fire_delay(str(schedule.pk), fire.fire_time, 20) == delay
