from __future__ import annotations

from rest_framework import serializers

from workflows.models import WorkflowDefinition, WorkflowVersion, slug_validator


class WorkflowCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100, validators=[slug_validator])
    description = serializers.CharField(required=False, allow_blank=True, default="")
    definition = serializers.JSONField(help_text="The DSL definition of version 1.")


class WorkflowVersionCreateSerializer(serializers.Serializer):
    definition = serializers.JSONField(help_text="The DSL definition of the new version.")


class WorkflowSerializer(serializers.ModelSerializer):
    """A workflow from selectors.workflow_list, with its latest version's definition."""

    latest_version = serializers.IntegerField(read_only=True, allow_null=True)
    definition = serializers.JSONField(source="latest_definition", read_only=True)

    class Meta:
        model = WorkflowDefinition
        fields = ["id", "name", "description", "latest_version", "created_at", "definition"]
        read_only_fields = fields


class WorkflowVersionSerializer(serializers.ModelSerializer):
    workflow_id = serializers.IntegerField(read_only=True)

    class Meta:
        model = WorkflowVersion
        fields = ["workflow_id", "version", "definition", "created_at"]
        read_only_fields = fields
