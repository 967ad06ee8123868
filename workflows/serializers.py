from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from workflows.models import WorkflowDefinition, WorkflowVersion, slug_validator
from workflows.rest.fields import StrictCharField


@extend_schema_field({"$ref": "#/components/schemas/Definition"})
class DefinitionField(serializers.JSONField):
    """A definition: its JSON Schema is workflows.definition_schema; the DSL parser (in
    the service) checks everything, and names node and field in its 400."""


class WorkflowCreateSerializer(serializers.Serializer):
    name = StrictCharField(max_length=100, validators=[slug_validator])
    description = StrictCharField(required=False, allow_blank=True, default="", max_length=10_000)
    definition = DefinitionField(help_text="The DSL definition of version 1.")


class WorkflowVersionCreateSerializer(serializers.Serializer):
    definition = DefinitionField(help_text="The DSL definition of the new version.")


class WorkflowSerializer(serializers.ModelSerializer):
    """A workflow from selectors.workflow_list, with its latest version's definition."""

    latest_version = serializers.IntegerField(read_only=True, allow_null=True)
    definition = DefinitionField(source="latest_definition", read_only=True, allow_null=True)

    class Meta:
        model = WorkflowDefinition
        fields = [
            "id",
            "name",
            "description",
            "latest_version",
            "created_at",
            "created_by",
            "definition",
        ]
        read_only_fields = fields


class WorkflowVersionSerializer(serializers.ModelSerializer):
    workflow_id = serializers.IntegerField(read_only=True)
    definition = DefinitionField(read_only=True)

    class Meta:
        model = WorkflowVersion
        fields = ["workflow_id", "version", "definition", "created_at", "created_by"]
        read_only_fields = fields
