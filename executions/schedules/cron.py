"""Cron arithmetic for schedules: pure functions of (expression, timezone, instant).

Two parsers must agree on every expression we accept: celery's crontab, which the beat
(django-celery-beat's DatabaseScheduler) uses to decide when to fire, and croniter, which
computes `next_run_at` and the tick a firing belongs to. So an expression is valid only if
both accept it, and croniter runs with `day_or=False` because celery ANDs a restricted
day-of-month with a restricted day-of-week (classic cron ORs them).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo, available_timezones

from celery.schedules import crontab
from croniter import croniter

#: The CrontabSchedule column each of the five fields is stored in, with its max_length
#: (django_celery_beat.models.CrontabSchedule): longer values would fail on PostgreSQL.
FIELDS: tuple[tuple[str, int], ...] = (
    ("minute", 240),
    ("hour", 96),
    ("day_of_month", 124),
    ("month_of_year", 64),
    ("day_of_week", 64),
)

#: How early (by the worker's clock) a beat message may arrive and still belong to the
#: coming tick: covers clock skew between the beat and worker hosts. Late messages belong
#: to their tick as long as they arrive before the next one minus this margin.
CLOCK_SKEW = timedelta(seconds=10)

_HINT = "five fields: minute hour day-of-month month day-of-week, e.g. '*/5 * * * *'"


class CronError(ValueError):
    """An expression or timezone we refuse; the message tells the caller how to fix it."""


def cron_fields(expression: str) -> dict[str, str]:
    """The five fields as CrontabSchedule keyword arguments; raises CronError if invalid."""
    parts = expression.split()
    if len(parts) != len(FIELDS):
        raise CronError(f"'{expression}' has {len(parts)} field(s); a cron expression has {_HINT}.")
    fields = {name: part for (name, _), part in zip(FIELDS, parts, strict=True)}
    for name, max_length in FIELDS:
        if len(fields[name]) > max_length:
            raise CronError(f"The {name} field is longer than {max_length} characters.")
    if not croniter.is_valid(" ".join(parts)):
        raise CronError(f"'{expression}' is not a valid cron expression ({_HINT}).")
    try:
        crontab(**fields)
    except (ValueError, TypeError, IndexError) as exc:
        # croniter extensions celery's beat cannot run: L, W, #, ?, 7 for Sunday...
        raise CronError(f"'{expression}' is not supported by the scheduler: {exc}") from None
    return fields


@cache
def _zone_names() -> frozenset[str]:
    return frozenset(available_timezones())


def zone(name: str) -> ZoneInfo:
    """The IANA timezone `name`; raises CronError for anything else (paths, abbreviations)."""
    if name not in _zone_names():
        raise CronError(f"'{name}' is not an IANA timezone name, e.g. 'UTC' or 'Europe/Paris'.")
    return ZoneInfo(name)


def _iter(expression: str, tz_name: str, start: datetime) -> croniter:
    local = start.astimezone(zone(tz_name))
    return croniter(" ".join(expression.split()), local, day_or=False)


def next_fire(expression: str, tz_name: str, after: datetime) -> datetime:
    """The first fire time strictly after `after`, in UTC."""
    return _iter(expression, tz_name, after).get_next(datetime).astimezone(UTC)


def tick_for(expression: str, tz_name: str, now: datetime) -> datetime:
    """The fire time (UTC) a beat message handled at `now` belongs to.

    The latest fire time before now + CLOCK_SKEW: deterministic, so every duplicate of
    one beat message (a redelivery, a retried publish) maps to the same tick.
    """
    return _iter(expression, tz_name, now + CLOCK_SKEW).get_prev(datetime).astimezone(UTC)


def fires_between(
    expression: str, tz_name: str, after: datetime, until: datetime, limit: int
) -> list[datetime]:
    """Fire times (UTC) in (after, until], oldest first; at most the `limit` latest."""
    found: list[datetime] = []
    moments = _iter(expression, tz_name, until + timedelta(microseconds=1))
    while len(found) < limit:
        moment = moments.get_prev(datetime).astimezone(UTC)
        if moment <= after:
            break
        found.append(moment)
    return found[::-1]
