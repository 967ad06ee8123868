"""A schedule starts executions of a workflow on a cron expression.

The beat never reads this table: each Schedule owns a django-celery-beat PeriodicTask
(and its CrontabSchedule), written in the same transaction by executions.schedules.services, which
is what the DatabaseScheduler fires. PROTECT on the link means the PeriodicTask cannot be
deleted behind the schedule's back (delete the schedule instead).
"""

from __future__ import annotations

import uuid
from datetime import datetime

from django.db import models
from django_celery_beat.models import PeriodicTask

from executions.schedules.cron import next_fire
from workflows import clock


class Overlap(models.TextChoices):
    """What a fire does while an execution this schedule started is still running."""

    ALLOW = "allow"
    SKIP = "skip"
    #: Keep one fire, started when the running one ends (later ones are skipped).
    BUFFER_ONE = "buffer_one"
    #: Cancel the running ones, start anyway.
    CANCEL_OTHER = "cancel_other"


class Catchup(models.TextChoices):
    """Which fire times missed while beat was down run when it is back."""

    NONE = "none"
    LAST = "last"
    #: Every one within catchup_window_seconds, oldest first.
    ALL = "all"


class Schedule(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workflow = models.ForeignKey(
        "workflows.WorkflowDefinition", on_delete=models.PROTECT, related_name="schedules"
    )
    #: A pinned version; null runs the workflow's latest version at each tick.
    version = models.ForeignKey(
        "workflows.WorkflowVersion",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="schedules",
    )
    cron = models.CharField(max_length=100)
    timezone = models.CharField(max_length=64, default="UTC")
    input = models.JSONField(default=dict, blank=True)
    enabled = models.BooleanField(default=True)
    overlap = models.CharField(max_length=16, choices=Overlap.choices, default=Overlap.SKIP)
    catchup = models.CharField(max_length=8, choices=Catchup.choices, default=Catchup.LAST)
    catchup_window_seconds = models.PositiveIntegerField(default=3600)
    #: Each fire starts up to this much after its fire time (policy.fire_delay), so that
    #: many schedules on one cron do not all start at the same second.
    jitter_seconds = models.PositiveIntegerField(default=0)
    #: The latest fire time handled (started, skipped, buffered or passed over): the next
    #: fires are those after it. Null: none yet (fires after created_at count).
    last_fire_at = models.DateTimeField(null=True, blank=True)
    periodic_task = models.OneToOneField(
        PeriodicTask, on_delete=models.PROTECT, related_name="workflow_schedule", editable=False
    )
    created_at = models.DateTimeField(auto_now_add=True)
    #: Who created it, and who changed it last (audit).
    created_by = models.CharField(max_length=150, blank=True, default="")
    updated_by = models.CharField(max_length=150, blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.workflow} @ {self.cron} {self.timezone}"

    @property
    def version_number(self) -> int | None:
        return self.version.version if self.version is not None else None

    @property
    def next_run_at(self) -> datetime | None:
        """When the beat next fires this schedule (UTC); None while it is disabled."""
        if not self.enabled:
            return None
        return next_fire(self.cron, self.timezone, clock.now())


class FireOutcome(models.TextChoices):
    STARTED = "started"
    SKIPPED = "skipped"
    #: Waiting for the running execution to end (overlap buffer_one).
    BUFFERED = "buffered"


class ScheduleFire(models.Model):
    """One fire time of a schedule and what came of it: at most one per (schedule, fire
    time), however many beats fire the schedule or messages repeat."""

    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="fires")
    fire_time = models.DateTimeField()
    outcome = models.CharField(max_length=16, choices=FireOutcome.choices)
    execution = models.ForeignKey(
        "executions.Execution", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    #: When its execution was due to begin: the fire time plus the schedule's jitter.
    start_at = models.DateTimeField(null=True, blank=True)
    #: Started by POST /schedules/{id}/backfill rather than by the beat.
    backfill = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["fire_time"]
        constraints = [
            models.UniqueConstraint(fields=["schedule", "fire_time"], name="one_fire_per_time")
        ]

    def __str__(self) -> str:
        return f"{self.schedule_id} @ {self.fire_time:%Y-%m-%d %H:%M:%S}: {self.outcome}"
