"""Executions API: each view validates, then makes one call into a service or selector."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from executions import selectors
from executions.engine.statuses import ExecutionStatus, values
from executions.models import Execution
from executions.serializers import (
    AttemptSerializer,
    EventSerializer,
    ExecutionCreateSerializer,
    ExecutionSerializer,
    TaskSerializer,
)
from executions.services.start import execution_start
from workflows.models import WorkflowVersion


def _int_param(request: Request, name: str, default: int = 0) -> int:
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError({name: [f"'{raw}' is not a whole number."]}) from None
    if value < 0:
        raise ValidationError({name: ["Must be 0 or more."]})
    return value


class EventPagination(LimitOffsetPagination):
    default_limit = 500
    max_limit = 5000


class ExecutionListCreate(generics.ListAPIView):
    serializer_class = ExecutionSerializer

    def get_queryset(self):
        status_filter = self.request.query_params.get("status")
        if status_filter and status_filter not in values(ExecutionStatus):
            raise ValidationError(
                {"status": [f"Unknown status '{status_filter}'; one of {values(ExecutionStatus)}."]}
            )
        return selectors.execution_list(
            status=status_filter, workflow=self.request.query_params.get("workflow")
        )

    @extend_schema(request=ExecutionCreateSerializer, responses={201: ExecutionSerializer})
    def post(self, request: Request) -> Response:
        body = ExecutionCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        workflow = selectors.workflow_by_ref(data["workflow"])
        if workflow is None:
            raise ValidationError(
                {"workflow": [f"No workflow with id or name {data['workflow']!r}."]}
            )
        version = _version(workflow, data.get("version"))
        execution, _ = execution_start(
            version=version,
            input=data.get("input", {}),
            idempotency_key=request.headers.get("Idempotency-Key") or None,
            start_at=data.get("start_at"),
        )
        return Response(ExecutionSerializer(execution).data, status=status.HTTP_201_CREATED)


def _version(workflow, number: int | None) -> WorkflowVersion:
    versions = workflow.versions.order_by("-version")
    version = versions.filter(version=number).first() if number else versions.first()
    if version is None:
        raise ValidationError({"version": [f"Workflow '{workflow.name}' has no version {number}."]})
    return version


class ExecutionDetail(generics.RetrieveAPIView):
    serializer_class = ExecutionSerializer
    lookup_url_kwarg = "execution_id"
    queryset = Execution.objects.select_related("workflow", "version")


def _execution(execution_id) -> Execution:
    return get_object_or_404(Execution, pk=execution_id)


class TaskList(generics.ListAPIView):
    serializer_class = TaskSerializer
    pagination_class = EventPagination

    def get_queryset(self):
        return selectors.task_list(execution=_execution(self.kwargs["execution_id"]))


class TaskDetail(APIView):
    @extend_schema(responses=TaskSerializer)
    def get(self, request: Request, execution_id, node_id: str) -> Response:
        execution = _execution(execution_id)
        task = get_object_or_404(selectors.task_list(execution=execution), node_id=node_id)
        events = selectors.event_list(execution=execution).filter(node_id=node_id)
        attempts = selectors.attempt_list(execution=execution, node_id=node_id)
        body = TaskSerializer(task).data
        body["attempt_history"] = AttemptSerializer(attempts, many=True).data
        body["events"] = EventSerializer(events, many=True).data
        return Response(body)


class EventList(generics.ListAPIView):
    serializer_class = EventSerializer
    pagination_class = EventPagination

    @extend_schema(parameters=[OpenApiParameter("after_seq", int, description="Tail from here.")])
    def get(self, request: Request, *args, **kwargs) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        execution = _execution(self.kwargs["execution_id"])
        return selectors.event_list(
            execution=execution, after_seq=_int_param(self.request, "after_seq")
        )
