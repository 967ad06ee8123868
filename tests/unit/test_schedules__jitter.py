"""A schedule's jitter: a pure function of (schedule, fire time, jitter_seconds), so every
beat, redelivered message and replay of one fire agrees on its delay."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from executions.schedules.policy import fire_context, fire_delay, fire_time_text

SCHEDULE = "0f8fad5b-d9cb-469f-a165-70867728950e"
FIRE = datetime(2026, 3, 2, 10, 5, tzinfo=UTC)


def test_the_same_fire_always_gets_the_same_delay() -> None:
    delays = {fire_delay(SCHEDULE, FIRE, 600) for _ in range(5)}
    assert len(delays) == 1
    # Golden: a change of the hash would move the start of every fire already recorded.
    assert delays == {timedelta(seconds=120, milliseconds=310)}
    assert fire_delay(SCHEDULE, FIRE.astimezone(ZoneInfo("Europe/Paris")), 600) in delays


@pytest.mark.parametrize("jitter", [0, -5])
def test_no_jitter_no_delay(jitter: int) -> None:
    assert fire_delay(SCHEDULE, FIRE, jitter) == timedelta(0)


@given(
    schedule=st.uuids().map(str),
    minutes=st.integers(min_value=0, max_value=10_000_000),
    jitter=st.integers(min_value=1, max_value=86_400),
)
def test_the_delay_stays_in_its_range(schedule: str, minutes: int, jitter: int) -> None:
    fire = datetime(2000, 1, 1, tzinfo=UTC) + timedelta(minutes=minutes)
    delay = fire_delay(schedule, fire, jitter)
    assert timedelta(0) <= delay < timedelta(seconds=jitter)
    assert delay.microseconds % 1000 == 0  # whole milliseconds: exact in every database


def test_fires_and_schedules_spread_out() -> None:
    fires = [FIRE + timedelta(hours=hour) for hour in range(50)]
    assert len({fire_delay(SCHEDULE, fire, 3600) for fire in fires}) == 50
    others = [f"{SCHEDULE[:-2]}{n:02d}" for n in range(50)]
    assert len({fire_delay(other, FIRE, 3600) for other in others}) == 50


def test_the_fire_time_as_templates_see_it() -> None:
    paris = FIRE.astimezone(ZoneInfo("Europe/Paris"))
    assert fire_time_text(paris) == "2026-03-02T10:05:00Z"
    assert fire_context(SCHEDULE, paris) == {
        "schedule": {"id": SCHEDULE, "fire_time": "2026-03-02T10:05:00Z"}
    }
