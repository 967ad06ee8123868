"""Workflows API: each view validates the request shape, then makes one service or
selector call. Definitions are validated by the service; its DefinitionError becomes a
400 naming every node and field in workflows.rest.errors."""

from __future__ import annotations

from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from workflows import selectors
from workflows.models import WorkflowDefinition
from workflows.rest.openapi import extend_schema
from workflows.rest.views import EngineGenericView, EngineListView
from workflows.serializers import (
    WorkflowCreateSerializer,
    WorkflowSerializer,
    WorkflowVersionCreateSerializer,
    WorkflowVersionSerializer,
)
from workflows.services import workflow_create, workflow_version_create


def _workflow(ref: str) -> WorkflowDefinition:
    workflow = selectors.workflow_get(ref=ref)
    if workflow is None:
        raise NotFound(f"No workflow with id or name '{ref}'.")
    return workflow


class WorkflowListCreate(EngineListView):
    serializer_class = WorkflowSerializer

    def get_queryset(self):
        return selectors.workflow_list()

    @extend_schema(request=WorkflowCreateSerializer, responses={201: WorkflowSerializer})
    def post(self, request: Request) -> Response:
        body = WorkflowCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        workflow = workflow_create(**body.validated_data, by=request.user.get_username())
        created = _workflow(str(workflow.pk))
        return Response(WorkflowSerializer(created).data, status=status.HTTP_201_CREATED)


class WorkflowDetail(EngineGenericView):
    serializer_class = WorkflowSerializer

    def get(self, request: Request, workflow_id: str) -> Response:
        return Response(WorkflowSerializer(_workflow(workflow_id)).data)


class WorkflowVersionListCreate(EngineListView):
    serializer_class = WorkflowVersionSerializer

    def get_queryset(self):
        return selectors.workflow_version_list(workflow=_workflow(self.kwargs["workflow_id"]))

    @extend_schema(
        request=WorkflowVersionCreateSerializer, responses={201: WorkflowVersionSerializer}
    )
    def post(self, request: Request, workflow_id: str) -> Response:
        workflow = _workflow(workflow_id)
        body = WorkflowVersionCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        version = workflow_version_create(
            workflow=workflow,
            definition=body.validated_data["definition"],
            by=request.user.get_username(),
        )
        return Response(WorkflowVersionSerializer(version).data, status=status.HTTP_201_CREATED)
