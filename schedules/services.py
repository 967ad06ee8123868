"""Writes of schedules, and the run a beat tick triggers.

A Schedule and the PeriodicTask + CrontabSchedule the beat fires are written in one
transaction, so the beat never sees a task without its schedule or the reverse; saving
a PeriodicTask bumps django-celery-beat's change marker, which the DatabaseScheduler
polls to pick the change up without a restart.
"""

from __future__ import annotations

import json
import logging
import uuid
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from executions.models import Execution
from executions.services.start import execution_start
from schedules.cron import CronError, cron_fields, tick_for, zone
from schedules.models import Schedule
from schedules.selectors import schedule_get
from workflows.models import WorkflowDefinition, WorkflowVersion
from workflows.selectors import version_resolve

log = logging.getLogger(__name__)

RUN_TASK = "schedules.tasks.run_schedule"


def _pinned_version(workflow: WorkflowDefinition, number: int | None) -> WorkflowVersion | None:
    if number is None:
        return None
    found = workflow.versions.filter(version=number).first()
    if found is None:
        raise ValidationError(
            {
                "version": [
                    f"Workflow '{workflow.name}' has no version {number}; omit it to "
                    "run the latest version at each tick."
                ]
            }
        )
    return found


def _validated(cron: str, tz_name: str) -> dict[str, str]:
    errors: dict[str, list[str]] = {}
    fields: dict[str, str] = {}
    try:
        fields = cron_fields(cron)
    except CronError as exc:
        errors["cron"] = [str(exc)]
    try:
        zone(tz_name)
    except CronError as exc:
        errors["timezone"] = [str(exc)]
    if errors:
        raise ValidationError(errors)
    return fields


def schedule_create(
    *,
    workflow: WorkflowDefinition,
    cron: str,
    version: int | None = None,
    timezone_name: str = "UTC",
    input: Any = None,
    enabled: bool = True,
    by: str = "",
) -> Schedule:
    """A schedule and the beat entry that fires it; raises ValidationError naming the field."""
    fields = _validated(cron, timezone_name)
    pinned = _pinned_version(workflow, version)
    # The id is chosen up front so that the PeriodicTask, which must exist first (the
    # schedule's link to it is not nullable), can already carry it in its name and args.
    schedule_id = uuid.uuid4()
    with transaction.atomic():
        crontab = CrontabSchedule.objects.create(**fields, timezone=zone(timezone_name))
        task = PeriodicTask.objects.create(
            name=f"workflow-schedule:{schedule_id}",
            task=RUN_TASK,
            crontab=crontab,
            args=json.dumps([str(schedule_id)]),
            enabled=enabled,
            description=f"Starts workflow '{workflow.name}' ({cron}, {timezone_name}).",
        )
        return Schedule.objects.create(
            id=schedule_id,
            workflow=workflow,
            version=pinned,
            cron=" ".join(cron.split()),
            timezone=timezone_name,
            input={} if input is None else input,
            enabled=enabled,
            periodic_task=task,
            created_by=by,
            updated_by=by,
        )


def schedule_set_enabled(*, schedule: Schedule, enabled: bool, by: str = "") -> Schedule:
    """Pause or resume: the beat entry's flag mirrors the schedule's."""
    with transaction.atomic():
        schedule.enabled = enabled
        schedule.updated_by = by
        schedule.save(update_fields=["enabled", "updated_by", "updated_at"])
        # A full save(), not update(): it signals the running beat to reload, and pausing
        # clears last_run_at, so that resuming does not fire the ticks missed meanwhile.
        task = PeriodicTask.objects.get(pk=schedule.periodic_task_id)
        task.enabled = enabled
        task.save()
    return schedule


def schedule_delete(*, schedule: Schedule) -> None:
    """Remove the schedule and its beat entry; executions it started are kept."""
    with transaction.atomic():
        task = PeriodicTask.objects.get(pk=schedule.periodic_task_id)
        crontab_id = task.crontab_id
        schedule.delete()
        task.delete()
        # The crontab is ours alone, unless someone reused it for another beat entry.
        if crontab_id is not None:  # always set on ours (schedule_create)
            CrontabSchedule.objects.filter(pk=crontab_id, periodictask__isnull=True).delete()


def schedule_run(*, schedule_id: str, now: datetime | None = None) -> Execution | None:
    """Start the execution for the tick `now` falls in; at most one per (schedule, tick).

    None when there is nothing to do: the schedule was deleted or disabled after the beat
    sent the message. A duplicate message for a tick returns the execution already started:
    the tick's engine key `schedule:<id>:<tick>` (Execution.engine_key, a namespace no
    client Idempotency-Key can reach) finds it, whichever version was latest then.
    """
    schedule = schedule_get(schedule_id=schedule_id)
    if schedule is None or not schedule.enabled:
        return None
    tick = tick_for(schedule.cron, schedule.timezone, now or timezone.now())
    key = f"schedule:{schedule.pk}:{tick.isoformat()}"
    version = schedule.version or version_resolve(workflow=schedule.workflow, number=None)
    if version is None:
        log.error("schedule %s: workflow %s has no version to run", schedule.pk, schedule.workflow)
        return None
    execution, _ = execution_start(
        version=version, input=schedule.input, engine_key=key, by=f"schedule:{schedule.pk}"
    )
    return execution
