from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from executions.models import Attempt, Event, Execution, Task
from executions.tags import TAGS_SCHEMA, TagError, check_tags
from workflows import clock
from workflows.conf import engine_settings
from workflows.dsl.limits import limits
from workflows.rest.fields import (
    MAX_INT32,
    StrictCharField,
    StrictDateTimeField,
    StrictIntegerField,
    WorkflowRefField,
)
from workflows.rest.serializers import FieldsOnce


@extend_schema_field(TAGS_SCHEMA)
class TagsField(serializers.JSONField):
    """{key: value} strings, checked whole (strict input: a number is not a string)."""

    def to_internal_value(self, data: Any) -> dict[str, str]:
        try:
            return check_tags(super().to_internal_value(data))
        except TagError as exc:
            raise serializers.ValidationError(str(exc)) from None


class ExecutionSerializer(FieldsOnce, serializers.ModelSerializer):
    workflow_id = serializers.IntegerField(read_only=True)
    workflow = serializers.CharField(source="workflow.name", read_only=True)
    version = serializers.IntegerField(source="version.version", read_only=True)
    replay_of = serializers.UUIDField(source="replay_of_id", read_only=True, allow_null=True)
    parent_execution_id = serializers.UUIDField(read_only=True, allow_null=True)
    tags = TagsField(read_only=True)

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
            "priority",
            "concurrency_key",
            "held",
            "tags",
            "deadline_at",
        ]
        read_only_fields = fields
        extra_kwargs = {
            "priority": {"help_text": "0 to 9: 9 first when workers are saturated."},
            "concurrency_key": {
                "help_text": "The definition's concurrency.key rendered over the input "
                '("": the workflow has no concurrency limit).'
            },
            "deadline_at": {
                "help_text": "When it times out (the definition's timeout_seconds from its "
                "start, or its parent's deadline if sooner); null: never."
            },
            "held": {
                "help_text": "Waiting for room under its concurrency key (status pending, no "
                "event yet); true on an ended one means it ended before it ever started."
            },
        }


class FaultsSerializer(serializers.Serializer):
    """Fault injection (only where WORKFLOW_FAULT_INJECTION=1): each fault hits an attempt
    as decided from (seed, node, attempt), recorded as a fault_injected event."""

    duplicate_delivery = serializers.FloatField(
        required=False,
        min_value=0,
        max_value=1,
        help_text="Probability an attempt's message is delivered twice.",
    )
    crash_after_effect = serializers.FloatField(
        required=False,
        min_value=0,
        max_value=1,
        help_text="Probability the worker crashes after the effect, before recording the result.",
    )
    delay_result_seconds = serializers.FloatField(
        required=False, min_value=0, help_text="Record each result up to this many seconds late."
    )
    seed = StrictIntegerField(required=False, default=0, min_value=0, max_value=MAX_INT32)

    def validate_delay_result_seconds(self, value: float) -> float:
        limit = engine_settings.FAULT_MAX_DELAY_SECONDS
        if value > limit:
            raise serializers.ValidationError(
                f"At most {limit:g} (WORKFLOW_FAULT_MAX_DELAY_SECONDS)."
            )
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        for name, value in attrs.items():
            if isinstance(value, float) and not math.isfinite(value):
                raise serializers.ValidationError({name: ["Must be a finite number."]})
        return attrs


class StartSignalSerializer(serializers.Serializer):
    name = StrictCharField(
        max_length=200, help_text="A name a signal node of the workflow waits for."
    )
    data = serializers.JSONField(  # type: ignore[assignment]
        required=False, default=None, allow_null=True, help_text="Any JSON: the node's output."
    )


class ExecutionCreateSerializer(serializers.Serializer):
    workflow = WorkflowRefField(help_text="The workflow's id or name.")
    version = StrictIntegerField(
        required=False, min_value=1, max_value=MAX_INT32, help_text="Default: the latest."
    )
    input = serializers.JSONField(
        required=False, default=dict, allow_null=True, help_text="Any JSON; null means {}."
    )
    start_at = StrictDateTimeField(
        required=False, help_text="Start no earlier than this (an RFC 3339 date-time)."
    )
    faults = FaultsSerializer(
        required=False, help_text="Fault injection; refused unless WORKFLOW_FAULT_INJECTION=1."
    )
    priority = StrictIntegerField(
        required=False,
        default=0,
        min_value=0,
        max_value=9,
        help_text="0 to 9, 9 first: when workers are saturated, the nodes of higher-priority "
        "executions are run first (Redis broker; the embedded broker keeps arrival order).",
    )
    tags = TagsField(required=False, default=dict, allow_null=True)
    signal = StartSignalSerializer(
        required=False,
        help_text="Signal-with-start (needs an Idempotency-Key): delivered to the execution "
        "the key started if it has not ended (200), or the execution is started with the "
        "signal waiting for its node (201).",
    )

    def validate_faults(self, value: dict[str, Any]) -> dict[str, Any]:
        if not engine_settings.FAULT_INJECTION:
            raise serializers.ValidationError(
                "Fault injection is off on this server (WORKFLOW_FAULT_INJECTION=1 turns it on,"
                " for testing only)."
            )
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("faults") is not None and attrs.get("start_at") is not None:
            raise serializers.ValidationError({"faults": ["Not with start_at."]})
        return attrs

    def validate_start_at(self, value: datetime) -> datetime:
        # As far ahead as a delay node may wait (WORKFLOW_MAX_DELAY_SECONDS).
        limit = limits().max_delay_seconds
        if value - clock.now() > timedelta(seconds=limit):
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
