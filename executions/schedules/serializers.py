from __future__ import annotations

from rest_framework import serializers

from executions.schedules.models import Catchup, Overlap, Schedule
from workflows.rest.fields import (
    MAX_INT32,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    WorkflowRefField,
)

#: A day: a longer spread would start fires of an hourly cron after later ones.
MAX_JITTER_SECONDS = 86400


class ScheduleCreateSerializer(serializers.Serializer):
    # NUL characters are refused for every body by workflows.rest.parsers.StrictJSONParser.
    workflow = WorkflowRefField(help_text="The workflow's id or name.")
    version = StrictIntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=MAX_INT32,
        help_text="Pin a version; omit (or null) to run the latest version at each tick.",
    )
    cron = StrictCharField(
        max_length=100, help_text="Five fields: minute hour day-of-month month day-of-week."
    )
    timezone = StrictCharField(
        required=False, default="UTC", max_length=64, help_text="IANA name the cron runs in."
    )
    input = serializers.JSONField(
        required=False,
        default=dict,
        allow_null=True,
        help_text="Any JSON; null means {}. {{ schedule.fire_time }} (ISO 8601, UTC) and "
        "{{ schedule.id }} in its strings are rendered at each fire.",
    )
    enabled = StrictBooleanField(required=False, default=True)
    overlap = serializers.ChoiceField(
        choices=Overlap.choices,
        required=False,
        default=Overlap.SKIP,
        help_text="While an execution it started runs: allow, skip, buffer_one, cancel_other.",
    )
    catchup = serializers.ChoiceField(
        choices=Catchup.choices,
        required=False,
        default=Catchup.LAST,
        help_text="Fires missed while beat was down: none, last, all (within the window).",
    )
    catchup_window_seconds = StrictIntegerField(
        required=False, default=3600, min_value=0, max_value=MAX_INT32
    )
    jitter_seconds = StrictIntegerField(
        required=False,
        default=0,
        min_value=0,
        max_value=MAX_JITTER_SECONDS,
        help_text="Each fire starts a deterministic 0 to jitter_seconds after its fire time.",
    )


class ScheduleUpdateSerializer(serializers.Serializer):
    """A PATCH: every field optional, an absent one unchanged (an empty body changes
    nothing)."""

    enabled = StrictBooleanField(
        required=False, help_text="false pauses the schedule, true resumes it."
    )
    cron = StrictCharField(
        required=False, max_length=100, help_text="A new cron: fires from now on."
    )
    input = serializers.JSONField(
        required=False, allow_null=True, help_text="Any JSON; null means {}."
    )
    overlap = serializers.ChoiceField(choices=Overlap.choices, required=False)
    catchup = serializers.ChoiceField(choices=Catchup.choices, required=False)
    catchup_window_seconds = StrictIntegerField(required=False, min_value=0, max_value=MAX_INT32)
    jitter_seconds = StrictIntegerField(required=False, min_value=0, max_value=MAX_JITTER_SECONDS)


class ScheduleSerializer(serializers.ModelSerializer):
    workflow_id = serializers.IntegerField(read_only=True)
    workflow = serializers.CharField(source="workflow.name", read_only=True)
    version = serializers.IntegerField(
        source="version_number",
        read_only=True,
        allow_null=True,
        help_text="The pinned version; null runs the latest version at each tick.",
    )
    next_run_at = serializers.DateTimeField(
        read_only=True, allow_null=True, help_text="UTC; null while the schedule is disabled."
    )

    class Meta:
        model = Schedule
        fields = [
            "id",
            "workflow_id",
            "workflow",
            "version",
            "cron",
            "timezone",
            "input",
            "enabled",
            "overlap",
            "catchup",
            "catchup_window_seconds",
            "jitter_seconds",
            "last_fire_at",
            "next_run_at",
            "created_at",
            "created_by",
            "updated_by",
        ]
        read_only_fields = fields


class BackfillSerializer(serializers.Serializer):
    start = serializers.DateTimeField(help_text="ISO 8601; the first fire time it may run.")
    end = serializers.DateTimeField(
        help_text="ISO 8601, not after now; the last fire time it may run (inclusive)."
    )


class FireSerializer(serializers.Serializer):
    fire_time = serializers.DateTimeField(read_only=True)
    outcome = serializers.CharField(read_only=True)
    execution_id = serializers.UUIDField(read_only=True, allow_null=True)


class BackfillResultSerializer(serializers.Serializer):
    schedule_id = serializers.UUIDField(read_only=True)
    started = FireSerializer(
        many=True, read_only=True, help_text="The fire times it started, oldest first."
    )
    already_ran = FireSerializer(
        many=True, read_only=True, help_text="Fire times run before: nothing new started."
    )
