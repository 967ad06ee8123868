from __future__ import annotations

from typing import Any

from rest_framework import serializers

from executions.triggers.models import PublishedEvent, Trigger
from workflows.rest.fields import (
    MAX_INT32,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictSlugField,
    WorkflowRefField,
)


class TriggerCreateSerializer(serializers.Serializer):
    name = StrictSlugField(max_length=100)
    event = StrictCharField(max_length=200, help_text="The event key it answers.")
    workflow = WorkflowRefField(help_text="The workflow's id or name.")
    version = StrictIntegerField(
        required=False, allow_null=True, min_value=1, max_value=MAX_INT32,
        help_text="Pin a version; omit to run the latest.",
    )  # fmt: skip
    input = serializers.JSONField(
        required=False, default=None, allow_null=True,
        help_text='A template over {"event": {"key", "data"}}; omit: the event\'s data.',
    )  # fmt: skip
    filter = StrictCharField(
        required=False, default="", allow_blank=True, max_length=1000,
        help_text="A JMESPath expression over {\"event\": ...}; the trigger fires when truthy.",
    )  # fmt: skip
    enabled = StrictBooleanField(required=False, default=True)


class TriggerUpdateSerializer(serializers.Serializer):
    """A PATCH: every field optional, an absent one unchanged; the name, event and
    workflow are the trigger's identity (delete it and create another to change them)."""

    enabled = StrictBooleanField(required=False, help_text="false: events start nothing.")
    filter = StrictCharField(
        required=False, allow_blank=True, max_length=1000,
        help_text='A JMESPath expression over {"event": ...}; "" fires on every event.',
    )  # fmt: skip
    input = serializers.JSONField(
        required=False, allow_null=True,
        help_text='A template over {"event": {"key", "data"}}; null: the event\'s data.',
    )  # fmt: skip
    version = StrictIntegerField(
        required=False, allow_null=True, min_value=1, max_value=MAX_INT32,
        help_text="Pin a version; null runs the latest.",
    )  # fmt: skip

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # A key this PATCH cannot change is refused, not silently ignored.
        others = sorted(set(self.initial_data) - set(self.fields))
        if others:
            raise serializers.ValidationError(
                {key: ["cannot be changed: PATCH takes enabled, filter, input, version."]
                 for key in others}
            )  # fmt: skip
        return attrs


class TriggerSerializer(serializers.ModelSerializer):
    workflow = serializers.CharField(source="workflow.name", read_only=True)
    version = serializers.SerializerMethodField()

    class Meta:
        model = Trigger
        fields = [
            "name",
            "event",
            "workflow",
            "version",
            "input",
            "filter",
            "enabled",
            "created_at",
            "created_by",
        ]
        read_only_fields = fields

    def get_version(self, trigger: Trigger) -> int | None:
        return trigger.version.version if trigger.version is not None else None


class EventCreateSerializer(serializers.Serializer):
    key = StrictCharField(max_length=200, help_text="Starts every enabled trigger of this event.")
    data = serializers.JSONField(  # type: ignore[assignment]
        required=False, default=None, allow_null=True, help_text="Any JSON."
    )


class EventAcceptedSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    executions = serializers.ListField(child=serializers.UUIDField())


__all__ = ["PublishedEvent"]
