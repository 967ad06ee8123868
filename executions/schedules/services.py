"""Writes of schedules, and the run a beat tick triggers.

A Schedule and the PeriodicTask + CrontabSchedule the beat fires are written in one
transaction, so the beat never sees a task without its schedule or the reverse; saving
a PeriodicTask bumps django-celery-beat's change marker, which the DatabaseScheduler
polls to pick the change up without a restart.
"""

from __future__ import annotations

import contextlib
import json
import logging
import uuid
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from executions.engine.statuses import EXECUTION_TERMINAL
from executions.models import Execution
from executions.schedules.cron import (
    CLOCK_SKEW,
    CronError,
    cron_fields,
    fires_between,
    tick_for,
    zone,
)
from executions.schedules.models import FireOutcome, Overlap, Schedule, ScheduleFire
from executions.schedules.policy import (
    MAX_CATCHUP,
    fire_context,
    fire_delay,
    overlap_outcome,
    to_fire,
)
from executions.schedules.selectors import schedule_get
from executions.services import admission
from executions.services.control import NotAllowed, execution_cancel
from executions.services.start import execution_start
from workflows import clock
from workflows.celery import ORCHESTRATOR_QUEUE
from workflows.dsl.templates import TemplateError, compile_expression, expressions, render, root_of
from workflows.models import WorkflowDefinition
from workflows.selectors import version_resolve
from workflows.services import version_pinned

log = logging.getLogger(__name__)

RUN_TASK = "executions.schedules.tasks.run_schedule"


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


#: The one root a schedule's input templates read (policy.fire_context).
INPUT_ROOT = "schedule"


def _checked_input(value: Any) -> Any:
    """The input, its templates checked: each must compile and read `schedule` (its
    fire_time or id), the only thing known when a schedule fires. ValidationError naming
    the input otherwise."""
    problems = []
    for expression in expressions(value):
        try:
            compile_expression(expression)
        except TemplateError as exc:
            problems.append(str(exc))
            continue
        if root_of(expression) != INPUT_ROOT:
            problems.append(
                f"{{{{ {expression} }}}}: a schedule's input templates read only "
                "schedule.fire_time and schedule.id."
            )
    if problems:
        raise ValidationError({"input": problems})
    return {} if value is None else value


def schedule_create(
    *,
    workflow: WorkflowDefinition,
    cron: str,
    version: int | None = None,
    timezone_name: str = "UTC",
    input: Any = None,
    enabled: bool = True,
    overlap: str = Overlap.SKIP,
    catchup: str = "last",
    catchup_window_seconds: int = 3600,
    jitter_seconds: int = 0,
    by: str = "",
) -> Schedule:
    """A schedule and the beat entry that fires it; raises ValidationError naming the field."""
    fields = _validated(cron, timezone_name)
    input = _checked_input(input)
    pinned = version_pinned(
        workflow=workflow, number=version, hint="; omit it to run the latest version at each tick"
    )
    # The id is chosen up front so that the PeriodicTask, which must exist first (the
    # schedule's link to it is not nullable), can already carry it in its name and args.
    schedule_id = uuid.uuid4()
    with transaction.atomic():
        crontab = CrontabSchedule.objects.create(**fields, timezone=zone(timezone_name))
        task = PeriodicTask.objects.create(
            name=f"workflow-schedule:{schedule_id}",
            task=RUN_TASK,
            # Beat sends it by name: with its queue, whether or not beat knows the task.
            queue=ORCHESTRATOR_QUEUE,
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
            input=input,
            enabled=enabled,
            overlap=overlap,
            catchup=catchup,
            catchup_window_seconds=catchup_window_seconds,
            jitter_seconds=jitter_seconds,
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


def schedule_update(*, schedule: Schedule, changes: dict[str, Any], by: str = "") -> Schedule:
    """PATCH: cron, input, enabled, overlap, catchup, catchup_window_seconds,
    jitter_seconds; an absent key is unchanged. A new cron fires from now on (no catch-up
    of its past ticks)."""
    if "input" in changes:
        changes = {**changes, "input": _checked_input(changes["input"])}
    if "enabled" in changes:
        schedule_set_enabled(schedule=schedule, enabled=changes["enabled"], by=by)
    fields = ["updated_by", "updated_at"]
    with transaction.atomic():
        if "cron" in changes:
            crontab_fields = _validated(changes["cron"], schedule.timezone)
            schedule.cron = " ".join(changes["cron"].split())
            schedule.last_fire_at = clock.now()
            fields += ["cron", "last_fire_at"]
            task = PeriodicTask.objects.get(pk=schedule.periodic_task_id)
            # Ours always has a crontab (schedule_create).
            CrontabSchedule.objects.filter(pk=task.crontab_id or 0).update(**crontab_fields)
            task.save()  # bumps the beat's change marker: it reloads the entry
        for name in ("input", "overlap", "catchup", "catchup_window_seconds", "jitter_seconds"):
            if name in changes:
                setattr(schedule, name, changes[name])
                fields.append(name)
        schedule.updated_by = by
        schedule.save(update_fields=fields)
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
    """Handle the fire times due at `now`: at most one execution per (schedule, fire time).

    The fires after the last one handled (the current tick alone for a schedule that has
    fired none yet) are chosen by `catchup` (executions/schedules/policy.py), and each runs, is
    skipped or buffered by `overlap`; each gets a ScheduleFire row. The schedule's row
    lock serializes beats firing it at once, and the fire's engine key
    `schedule:<id>:<tick>` (a namespace no client Idempotency-Key can reach) its start.
    None when there is nothing to start (deleted, disabled, skipped); a duplicate message
    for a tick returns the execution that tick started.
    """
    found = schedule_get(schedule_id=schedule_id)
    if found is None:
        return None
    now = now or clock.now()
    # Several fires may start in this transaction: they admit after its commit
    # (services/admission.py).
    with admission.deferred(), transaction.atomic():
        schedule = Schedule.objects.select_for_update().filter(pk=found.pk).first()
        if schedule is None or not schedule.enabled:
            return None
        started = _release_buffered(schedule)
        current = tick_for(schedule.cron, schedule.timezone, now)
        if schedule.last_fire_at is None:
            due = [current]
        else:
            until = now + CLOCK_SKEW
            due = fires_between(
                schedule.cron, schedule.timezone, schedule.last_fire_at, until, MAX_CATCHUP
            )
        if not due:
            fire = ScheduleFire.objects.filter(schedule=schedule, fire_time=current).first()
            return fire.execution if fire is not None else started
        for fire_time in to_fire(
            due, catchup=schedule.catchup, window_seconds=schedule.catchup_window_seconds, now=now
        ):
            started = _fire(schedule, fire_time) or started
        schedule.last_fire_at = due[-1]
        schedule.save(update_fields=["last_fire_at"])
        return started


def _running(schedule: Schedule) -> list[Execution]:
    fires = ScheduleFire.objects.filter(schedule=schedule, execution__isnull=False)
    fires = fires.exclude(execution__status__in=EXECUTION_TERMINAL).select_related("execution")
    return [fire.execution for fire in fires if fire.execution is not None]


def _fire(schedule: Schedule, fire_time: datetime) -> Execution | None:
    existing = ScheduleFire.objects.filter(schedule=schedule, fire_time=fire_time).first()
    if existing is not None:
        return existing.execution
    running = _running(schedule)
    buffered = ScheduleFire.objects.filter(schedule=schedule, outcome=FireOutcome.BUFFERED)
    outcome = overlap_outcome(schedule.overlap, running=bool(running), buffered=buffered.exists())
    if outcome == FireOutcome.STARTED and schedule.overlap == Overlap.CANCEL_OTHER:
        for other in running:
            with contextlib.suppress(NotAllowed):
                execution_cancel(execution_id=other.pk, by=f"schedule:{schedule.pk}")
    fire = ScheduleFire(schedule=schedule, fire_time=fire_time, outcome=outcome)
    if outcome == FireOutcome.STARTED:
        start_fire(schedule, fire)
    fire.save(force_insert=True)
    return fire.execution


def _release_buffered(schedule: Schedule) -> Execution | None:
    """Start the buffered fire once nothing the schedule started runs (overlap buffer_one)."""
    fire = ScheduleFire.objects.filter(schedule=schedule, outcome=FireOutcome.BUFFERED).first()
    if fire is None or _running(schedule):
        return None
    start_fire(schedule, fire)
    fire.save(update_fields=["execution", "outcome", "start_at"])
    return fire.execution


def schedule_release(*, schedule_id: str) -> Execution | None:
    """An execution a schedule started ended: start its buffered fire, if any."""
    found = schedule_get(schedule_id=schedule_id)
    if found is None:
        return None
    with transaction.atomic():
        schedule = Schedule.objects.select_for_update().filter(pk=found.pk).first()
        if schedule is None or not schedule.enabled:
            return None
        return _release_buffered(schedule)


def start_fire(schedule: Schedule, fire: ScheduleFire) -> None:
    """Start the execution of `fire` (not saved: the caller saves it), once per (schedule,
    fire time) through its engine key `schedule:<id>:<fire time>`, at the fire time plus
    its jitter, with `{{ schedule.fire_time }}` rendered in the input."""
    fire.outcome = FireOutcome.STARTED
    fire.start_at = fire.fire_time + fire_delay(
        str(schedule.pk), fire.fire_time, schedule.jitter_seconds
    )
    key = f"schedule:{schedule.pk}:{fire.fire_time.isoformat()}"
    version = schedule.version or version_resolve(workflow=schedule.workflow, number=None)
    if version is None:
        log.error("schedule %s: workflow %s has no version to run", schedule.pk, schedule.workflow)
        return
    try:
        input = render(schedule.input, fire_context(str(schedule.pk), fire.fire_time))
    except TemplateError:
        log.exception("schedule %s: its input did not render", schedule.pk)
        return
    fire.execution, _ = execution_start(
        version=version,
        input=input,
        engine_key=key,
        start_at=fire.start_at if schedule.jitter_seconds else None,
        by=f"schedule:{schedule.pk}",
    )
