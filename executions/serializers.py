from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone
from rest_framework import serializers

from config.fields import MAX_INT32, StrictIntegerField, WorkflowRefField
from executions.models import Attempt, Event, Execution, Task


class ExecutionSerializer(serializers.ModelSerializer):
    workflow_id = serializers.IntegerField(read_only=True)
    workflow = serializers.CharField(source="workflow.name", read_only=True)
    version = serializers.IntegerField(source="version.version", read_only=True)
    replay_of = serializers.UUIDField(source="replay_of_id", read_only=True, allow_null=True)
    parent_execution_id = serializers.UUIDField(read_only=True, allow_null=True)

    class Meta:
        model = Execution
        fields = [
            "id",
            "workflow_id",
            "workflow",
            "version",
            "status",
            "input",
            "output",
            "error",
            "created_at",
            "started_at",
            "ended_at",
            "replay_of",
            "parent_execution_id",
            "created_by",
        ]
        read_only_fields = fields


class ExecutionCreateSerializer(serializers.Serializer):
    workflow = WorkflowRefField(help_text="The workflow's id or name.")
    version = StrictIntegerField(
        required=False, min_value=1, max_value=MAX_INT32, help_text="Default: the latest."
    )
    input = serializers.JSONField(
        required=False, default=dict, allow_null=True, help_text="Any JSON; null means {}."
    )
    start_at = serializers.DateTimeField(
        required=False, help_text="Start no earlier than this (ISO 8601, with an offset)."
    )

    def validate_start_at(self, value: datetime) -> datetime:
        # As far ahead as a delay node may wait (WORKFLOW_MAX_DELAY_SECONDS).
        limit = float(getattr(settings, "WORKFLOW_MAX_DELAY_SECONDS", 366 * 86400))
        if value - timezone.now() > timedelta(seconds=limit):
            raise serializers.ValidationError(
                f"At most {limit:g} seconds ahead (WORKFLOW_MAX_DELAY_SECONDS)."
            )
        return value


class TaskSerializer(serializers.ModelSerializer):
    class Meta:
        model = Task
        fields = [
            "node_id",
            "type",
            "status",
            "attempts",
            "retry_count",
            "input",
            "output",
            "error",
            "started_at",
            "ended_at",
            "next_retry_at",
        ]


class EventSerializer(serializers.ModelSerializer):
    class Meta:
        model = Event
        # hash: the chain (executions/engine/chain.py), for clients that keep their own copy.
        fields = ["seq", "type", "node_id", "attempt", "data", "timestamp", "source", "hash"]


class AttemptSerializer(serializers.ModelSerializer):
    class Meta:
        model = Attempt
        fields = [
            "attempt",
            "status",
            "worker_id",
            "scheduled_at",
            "claimed_at",
            "lease_expires_at",
            "deadline_at",
            "finished_at",
        ]


class TaskDetailSerializer(TaskSerializer):
    """One node, with its latest attempts and events (each list capped by
    WORKFLOW_API_TASK_DETAIL_ITEMS; the totals say how many there are)."""

    attempt_history = AttemptSerializer(many=True, read_only=True)
    attempts_total = serializers.IntegerField(read_only=True)
    events = EventSerializer(many=True, read_only=True)
    events_total = serializers.IntegerField(read_only=True)

    class Meta(TaskSerializer.Meta):
        fields = [
            *TaskSerializer.Meta.fields,
            "attempt_history",
            "attempts_total",
            "events",
            "events_total",
        ]
