"""Backfill: run a schedule's past fire times in a range, each at most once.

A fire time already handled keeps what came of it (started or buffered: its execution, or
the one coming); one the overlap policy skipped runs now. The per-(schedule, fire time)
row and the fire's engine key make a repeated backfill, or one racing the beat, start
nothing twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import transaction

from executions.engine.timeutil import EARLIEST
from executions.schedules.cron import fires_between
from executions.schedules.models import FireOutcome, Schedule, ScheduleFire
from executions.schedules.services import start_fire
from executions.services import admission
from workflows import clock
from workflows.conf import engine_settings


@dataclass
class Backfilled:
    """What a backfill did: the fire times it started, and those that had run before."""

    started: list[ScheduleFire] = field(default_factory=list)
    already_ran: list[ScheduleFire] = field(default_factory=list)


def backfill_fire_times(*, schedule: Schedule, start: datetime, end: datetime) -> list[datetime]:
    """The schedule's fire times t with start <= t <= end, oldest first. ValidationError
    naming the field: end before start, end in the future, or more than
    WORKFLOW_BACKFILL_MAX fire times."""
    if end < start:
        raise ValidationError({"end": [f"end ({end.isoformat()}) is before start."]})
    now = clock.now()
    if end > now:
        raise ValidationError(
            {"end": [f"end ({end.isoformat()}) is in the future; a backfill runs past fires."]}
        )
    most = engine_settings.BACKFILL_MAX
    start = max(start, EARLIEST)  # nothing fired before; and no date arithmetic overflows
    # One more than the bound: finding it says the range is too long, without listing it.
    found = fires_between(
        schedule.cron, schedule.timezone, start - timedelta(microseconds=1), end, most + 1
    )
    if len(found) > most:
        raise ValidationError(
            {
                "end": [
                    f"The range holds more than {most:,} fire times; narrow it down or raise "
                    "WORKFLOW_BACKFILL_MAX."
                ]
            }
        )
    return found


def schedule_backfill(*, schedule: Schedule, start: datetime, end: datetime) -> Backfilled:
    """Start one execution per fire time in [start, end] that has not run yet."""
    fire_times = backfill_fire_times(schedule=schedule, start=start, end=end)
    done = Backfilled()
    # Every start admits after the commit (services/admission.py); the schedule's row
    # lock keeps the beat from firing one of these fire times meanwhile.
    with admission.deferred(), transaction.atomic():
        # Only the schedule's own row: its version is an outer join, which cannot be locked.
        locked = Schedule.objects.select_for_update(of=("self",)).select_related(
            "workflow", "version"
        )
        schedule = locked.get(pk=schedule.pk)
        known = {
            fire.fire_time: fire
            for fire in ScheduleFire.objects.filter(schedule=schedule, fire_time__in=fire_times)
        }
        for fire_time in fire_times:
            fire = known.get(fire_time)
            if fire is not None and fire.outcome != FireOutcome.SKIPPED:
                done.already_ran.append(fire)
                continue
            fire = fire or ScheduleFire(schedule=schedule, fire_time=fire_time)
            fire.backfill = True
            start_fire(schedule, fire)
            fire.save()
            done.started.append(fire)
    return done
