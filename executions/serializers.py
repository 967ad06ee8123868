from __future__ import annotations

from rest_framework import serializers

from executions.models import Attempt, Event, Execution, Task


class ExecutionSerializer(serializers.ModelSerializer):
    workflow_id = serializers.IntegerField(read_only=True)
    workflow = serializers.CharField(source="workflow.name", read_only=True)
    version = serializers.IntegerField(source="version.version", read_only=True)
    replay_of = serializers.UUIDField(source="replay_of_id", read_only=True)
    parent_execution_id = serializers.UUIDField(read_only=True)

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
        ]


class ExecutionCreateSerializer(serializers.Serializer):
    workflow = serializers.JSONField(help_text="The workflow's id or name.")
    version = serializers.IntegerField(required=False, min_value=1)
    input = serializers.JSONField(required=False, default=dict)
    start_at = serializers.DateTimeField(required=False)

    def validate_workflow(self, value: object) -> object:
        if isinstance(value, bool) or not isinstance(value, int | str) or value == "":
            raise serializers.ValidationError("Give the workflow's numeric id or its name.")
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
        fields = ["seq", "type", "node_id", "attempt", "data", "timestamp", "source"]


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
