"""The engine's place in Celery beat: its own periodic entries, which nothing in the
database can switch off, and a heartbeat file for the beat container's healthcheck.

The sweeper (lease timeouts, timers, lost messages, admission) is a periodic entry of
django-celery-beat's DatabaseScheduler, and that scheduler only runs what its table
holds: an operator who deletes or disables the row in the admin, or a database flush,
would stop every timeout and timer in the engine, silently, until beat restarts. So
every time the scheduler reads its table (at start, on every change, and every few
minutes regardless) the engine's entries are written back as the engine defines them
before the schedule is built. A row already as defined is not written again: a write
marks the schedule changed, which would make beat read it again on its next tick.

A host runs the stock `django_celery_beat.schedulers:DatabaseScheduler`: at `beat_init`
the scheduler it built becomes an `EngineScheduler` (the same class with two methods
more), so no beat setting of the engine's is needed.

Beat answers no control messages (`celery inspect ping` reaches workers only), so its
liveness is the age of a heartbeat file: every tick touches it, and beat ticks at least
every max_interval seconds (5 for this scheduler) and whenever an entry is due.
"""

from __future__ import annotations

import contextlib
import logging
from datetime import timedelta
from pathlib import Path
from typing import Any

from celery.signals import beat_init
from django_celery_beat.models import IntervalSchedule, PeriodicTask
from django_celery_beat.schedulers import DatabaseScheduler, ModelEntry

from workflows.celery import ORCHESTRATOR_QUEUE
from workflows.conf import engine_settings

log = logging.getLogger(__name__)

SWEEPER_ENTRY = "workflow-sweeper"
SWEEP_TASK = "executions.tasks.sweep"
#: The daily purge of what outlived its retention (WORKFLOW_RETENTION_DAYS, a definition's
#: retention_days): does nothing where neither is set.
RETENTION_ENTRY = "workflow-retention"
RETENTION_TASK = "executions.retention.tasks.purge_expired"
RETENTION_EVERY = timedelta(days=1)


def sweep_interval() -> int:
    """WORKFLOW_SWEEP_INTERVAL in whole seconds, at least 1: what django-celery-beat's
    IntervalSchedule can hold."""
    return max(round(engine_settings.SWEEP_INTERVAL), 1)


def engine_entries() -> dict[str, dict[str, Any]]:
    """The engine's periodic entries, as ModelEntry.from_entry takes them: celery's
    beat_schedule form, plus the row's fields an operator could have changed (written
    back too, or a disabled row would stay disabled)."""
    interval = sweep_interval()
    return {
        SWEEPER_ENTRY: {
            "task": SWEEP_TASK,
            "schedule": timedelta(seconds=interval),
            # A sweep beat could not hand over in time is dropped, not queued up behind
            # others: the next one does the same work.
            # Its queue given, as every engine message's: beat may not know the task.
            "options": {"expire_seconds": max(interval * 5, 5), "queue": ORCHESTRATOR_QUEUE},
            "enabled": True,
            "one_off": False,
            "start_time": None,
            "expires": None,
            "description": "The workflow engine's sweeper: restored by beat if changed.",
        },
        RETENTION_ENTRY: {
            "task": RETENTION_TASK,
            "schedule": RETENTION_EVERY,
            # One missed by more than an hour waits for the next day's.
            "options": {"expire_seconds": 3600, "queue": ORCHESTRATOR_QUEUE},
            "enabled": True,
            "one_off": False,
            "start_time": None,
            "expires": None,
            "description": "The workflow engine's daily retention purge: restored by beat "
            "if changed.",
        },
    }


def is_engine_entry(name: str) -> bool:
    return name in engine_entries()


def _as_defined(model: PeriodicTask, fields: dict[str, Any]) -> bool:
    """Whether the row still runs the entry as the engine defines it."""
    interval = model.interval
    every = fields["schedule"].total_seconds()
    return (
        model.enabled
        and model.task == fields["task"]
        and interval is not None
        and interval.period == IntervalSchedule.SECONDS
        and interval.every == every
        and model.crontab_id is None
        and model.solar_id is None
        and model.clocked_id is None
        and not model.one_off
        and model.start_time is None
        and model.expires is None
        and model.expire_seconds == fields["options"]["expire_seconds"]
        and model.queue == fields["options"]["queue"]
        and model.args in ("[]", "", None)
        and model.kwargs in ("{}", "", None)
    )


def heartbeat_path() -> Path:
    return engine_settings.VAR_DIR / "beat.heartbeat"


class EngineEntry(ModelEntry):
    """A row whose schedule is gone (its interval or crontab deleted under it) is refused
    with the ValueError the scheduler skips a row on: django-celery-beat would raise
    AttributeError instead, which ends beat and with it the sweeper every execution needs."""

    def __init__(self, model: PeriodicTask, app: Any = None) -> None:
        if model.scheduler is None:
            log.warning("beat: skipped periodic task %s: it has no schedule", model.name)
            raise ValueError(f"periodic task {model.name} has no schedule")
        super().__init__(model, app=app)


class EngineScheduler(DatabaseScheduler):
    """django-celery-beat's DatabaseScheduler that keeps the engine's entries in its
    table, skips rows with no schedule and touches a heartbeat file on every tick."""

    Entry = EngineEntry

    def all_as_schedule(self) -> dict[str, Any]:
        schedule: dict[str, Any] = super().all_as_schedule()
        for name, fields in engine_entries().items():
            entry = schedule.get(name)
            if entry is not None and _as_defined(entry.model, fields):
                continue
            try:
                schedule[name] = self.Entry.from_entry(name, app=self.app, **fields)
            except Exception:
                # The database is down: the entry beat already holds keeps running.
                log.exception("beat: could not restore the engine's entry %s", name)
                held = (self._schedule or {}).get(name)
                if held is not None:
                    schedule[name] = held
                continue
            log.warning("beat: restored the engine's periodic entry %s", name)
        return schedule

    def tick(self, *args: Any, **kwargs: Any) -> float:
        # A full or read-only disk fails the healthcheck, never the schedule.
        with contextlib.suppress(OSError):
            path = heartbeat_path()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
        return super().tick(*args, **kwargs)


@beat_init.connect
def _adopt_scheduler(sender: Any = None, **_: object) -> None:
    """Beat built its scheduler before this signal: a stock DatabaseScheduler becomes an
    EngineScheduler, and its schedule is read again through it so the engine's entries
    are there from the first tick."""
    scheduler = getattr(sender, "scheduler", None)
    if not isinstance(scheduler, DatabaseScheduler) or isinstance(scheduler, EngineScheduler):
        return
    if type(scheduler) is not DatabaseScheduler:
        log.warning(
            "beat: %s is not django-celery-beat's DatabaseScheduler; the engine's entries "
            "are not restored if removed",
            type(scheduler).__name__,
        )
        return
    scheduler.__class__ = EngineScheduler
    scheduler._schedule = scheduler.all_as_schedule()
    scheduler._heap = None  # type: ignore[assignment]  # celery's "rebuild the heap"
