from __future__ import annotations

from rest_framework import serializers

from schedules.models import Schedule

_NUL = "\x00"


def _has_nul(value: object) -> bool:
    """PostgreSQL stores no NUL character, in text or in jsonb: such input must be a 400
    here, not a DataError (500) at insert time. SQLite would take it, and differ."""
    if isinstance(value, str):
        return _NUL in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(item) for item in value)
    return False


class ScheduleCreateSerializer(serializers.Serializer):
    workflow = serializers.JSONField(help_text="The workflow's id or name.")
    version = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        help_text="Pin a version; omit (or null) to run the latest version at each tick.",
    )
    cron = serializers.CharField(
        max_length=100, help_text="Five fields: minute hour day-of-month month day-of-week."
    )
    timezone = serializers.CharField(
        required=False, default="UTC", max_length=64, help_text="IANA name the cron runs in."
    )
    input = serializers.JSONField(required=False, default=dict)
    enabled = serializers.BooleanField(required=False, default=True)

    def validate_workflow(self, value: object) -> object:
        if isinstance(value, bool) or not isinstance(value, int | str) or value == "":
            raise serializers.ValidationError("Give the workflow's numeric id or its name.")
        if _has_nul(value):
            raise serializers.ValidationError("Null characters are not allowed.")
        return value

    def validate_input(self, value: object) -> object:
        if _has_nul(value):
            raise serializers.ValidationError(
                "Null characters (\\u0000) are not allowed in keys or strings."
            )
        return value


class ScheduleUpdateSerializer(serializers.Serializer):
    enabled = serializers.BooleanField(help_text="false pauses the schedule, true resumes it.")


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
            "next_run_at",
            "created_at",
        ]
        read_only_fields = fields
