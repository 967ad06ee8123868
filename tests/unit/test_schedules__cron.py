"""executions.schedules.cron: what it accepts, and that its times agree with the beat's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django_celery_beat.tzcrontab import TzAwareCrontab

from executions.schedules.cron import CLOCK_SKEW, CronError, cron_fields, next_fire, tick_for, zone


def _beat_next(expression: str, tz_name: str, after: datetime) -> datetime:
    """The beat's own answer: celery's crontab as django-celery-beat builds it."""
    tz = zone(tz_name)
    crontab = TzAwareCrontab(**cron_fields(expression), tz=tz)
    start, delta, _ = crontab.remaining_delta(after.astimezone(tz))
    return (start + delta).astimezone(UTC)


@pytest.mark.parametrize(
    ("expression", "tz_name", "after"),
    [
        ("*/5 * * * *", "UTC", datetime(2025, 1, 1, 12, 2, 30, tzinfo=UTC)),
        ("30 9 * * 1-5", "Europe/Paris", datetime(2025, 3, 28, 9, 0, tzinfo=UTC)),
        ("0 2 * * *", "America/New_York", datetime(2025, 11, 1, 12, 0, tzinfo=UTC)),
        ("15 10 1 */3 *", "Asia/Kolkata", datetime(2025, 2, 10, 0, 0, tzinfo=UTC)),
        ("0 0 * jan mon", "UTC", datetime(2025, 1, 1, 0, 0, tzinfo=UTC)),
        # Both day fields restricted: celery requires both (not either, as classic cron).
        ("0 0 13 * 5", "UTC", datetime(2025, 1, 1, 0, 0, tzinfo=UTC)),
    ],
)
def test_next_fire_agrees_with_the_beat(expression, tz_name, after) -> None:
    assert next_fire(expression, tz_name, after) == _beat_next(expression, tz_name, after)


def test_friday_the_13th_is_the_and_of_both_day_fields() -> None:
    after = datetime(2025, 1, 1, tzinfo=UTC)
    assert next_fire("0 0 13 * 5", "UTC", after) == datetime(2025, 6, 13, tzinfo=UTC)


def test_tick_is_the_fire_time_a_message_belongs_to() -> None:
    tick = datetime(2025, 6, 1, 8, 5, tzinfo=UTC)
    for offset in (timedelta(0), timedelta(seconds=59), -CLOCK_SKEW + timedelta(seconds=1)):
        assert tick_for("*/5 * * * *", "UTC", tick + offset) == tick
    assert tick_for("*/5 * * * *", "UTC", tick - CLOCK_SKEW - timedelta(seconds=1)) < tick


def test_tick_in_a_timezone_is_returned_in_utc() -> None:
    tick = tick_for("0 9 * * *", "Europe/Paris", datetime(2025, 7, 1, 7, 0, 3, tzinfo=UTC))
    assert tick == datetime(2025, 7, 1, 7, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "expression",
    [
        "",
        "* * * *",
        "* * * * * *",
        "@hourly",
        "60 * * * *",
        "0 0 L * *",
        "0 0 ? * *",
        "0 0 * * 1#2",
        "0 0 * * 7",
        "0 0 31 2 *",
        "a b c d e",
    ],
)
def test_rejected_expressions(expression) -> None:
    with pytest.raises(CronError):
        cron_fields(expression)


@pytest.mark.parametrize("name", ["", "utc ", "CET+1", "../../etc/passwd", "Europe"])
def test_rejected_timezones(name) -> None:
    with pytest.raises(CronError):
        zone(name)
