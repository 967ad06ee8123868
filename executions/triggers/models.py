"""Event triggers: a trigger starts a workflow for every event whose key it
names and whose filter holds; an event records each execution it started."""

from __future__ import annotations

import uuid

from django.db import models


class Trigger(models.Model):
    name = models.SlugField(max_length=100, unique=True)
    #: The event key it answers (POST /events {"key": ...}).
    event = models.CharField(max_length=200, db_index=True)
    workflow = models.ForeignKey(
        "workflows.WorkflowDefinition", on_delete=models.PROTECT, related_name="triggers"
    )
    #: A pinned version; null runs the workflow's latest version.
    version = models.ForeignKey(
        "workflows.WorkflowVersion", on_delete=models.PROTECT, null=True, blank=True
    )
    #: A template over {"event": {"key", "data"}}; null: the event's data is the input.
    input = models.JSONField(null=True, blank=True)
    #: A JMESPath expression over {"event": ...}; empty: every event of the key.
    filter = models.CharField(max_length=1000, blank=True, default="")
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=150, blank=True, default="")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.event} -> {self.workflow})"


class PublishedEvent(models.Model):
    """An event published to POST /events (not an execution's log entry, `Event`)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    key = models.CharField(max_length=200, db_index=True)
    data = models.JSONField(null=True, blank=True)
    #: A client's Idempotency-Key: a repeat returns this event and starts nothing new.
    idempotency_key = models.CharField(max_length=255, null=True, blank=True, unique=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    created_by = models.CharField(max_length=150, blank=True, default="")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.key} @ {self.created_at:%Y-%m-%d %H:%M:%S}"


class TriggerRun(models.Model):
    """What one trigger made of one event: the execution it started, or why none."""

    event = models.ForeignKey(PublishedEvent, on_delete=models.CASCADE, related_name="runs")
    trigger_name = models.CharField(max_length=100)
    execution = models.ForeignKey(
        "executions.Execution", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    #: Why nothing started (the input template failed on this event), else empty.
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["trigger_name"]
        constraints = [
            models.UniqueConstraint(fields=["event", "trigger_name"], name="one_run_per_trigger")
        ]

    def __str__(self) -> str:
        return f"{self.event_id}: {self.trigger_name}"
