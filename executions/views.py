"""Executions API: each view validates, then makes one call into a service or selector."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from executions import selectors
from executions.filters import ExecutionFilter
from executions.longpoll import wait_for_rows
from executions.models import Execution
from executions.retention.tombstones import execution_or_gone
from executions.serializers import (
    AttemptSerializer,
    EventSerializer,
    ExecutionCreateSerializer,
    ExecutionSerializer,
    TaskDetailSerializer,
    TaskSerializer,
)
from executions.services.signals import execution_signal_with_start
from executions.services.start import execution_start
from workflows.conf import engine_settings
from workflows.dsl.concurrency import ConcurrencyKeyError
from workflows.models import WorkflowVersion
from workflows.rest.fields import MAX_INT32
from workflows.rest.openapi import CONFLICT, extend_schema, idempotency_header, query_parameter
from workflows.rest.pagination import CountlessPage, LogPage, SeqPage
from workflows.rest.parsers import idempotency_key, query_int, query_text
from workflows.rest.views import EngineListView, EngineRetrieveView, EngineView

IDEMPOTENCY_KEY = idempotency_header(
    "Repeating a request with the same key returns the execution the first one created "
    "(201) instead of starting another; the same key with a different body is a 409."
)


class ExecutionListCreate(EngineListView):
    """Newest first; filtered by the query parameters below, all of which must hold."""

    serializer_class = ExecutionSerializer
    pagination_class = CountlessPage
    filter_backends = [DjangoFilterBackend]
    filterset_class = ExecutionFilter

    def get_queryset(self):
        return selectors.execution_list()

    @extend_schema(
        request=ExecutionCreateSerializer,
        parameters=[IDEMPOTENCY_KEY],
        responses={200: ExecutionSerializer, 201: ExecutionSerializer, 409: CONFLICT},
    )
    def post(self, request: Request) -> Response:
        body = ExecutionCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        version = selectors.version_named(data["workflow"], data.get("version"))
        key = idempotency_key(request)
        input = {} if data["input"] is None else data["input"]
        if "signal" in data:
            return _signal_with_start(request, data, version, key, input)
        try:
            execution, _ = execution_start(
                version=version,
                input=input,
                idempotency_key=key,
                start_at=data.get("start_at"),
                by=request.user.get_username(),
                faults=data.get("faults"),
                priority=data["priority"],
                tags=data["tags"],
                # A 400 for an input the concurrency key cannot be rendered from (other
                # starters, with no one to answer, get a failed execution naming it).
                key_errors=True,
            )
        except ConcurrencyKeyError as exc:
            raise ValidationError({"input": [str(exc)]}) from None
        return Response(ExecutionSerializer(execution).data, status=status.HTTP_201_CREATED)


def _signal_with_start(
    request: Request, data: dict[str, Any], version: WorkflowVersion, key: str | None, input: Any
) -> Response:
    if key is None:
        needs = "Signal-with-start needs an Idempotency-Key header: it names the execution"
        raise ValidationError({"signal": [f"{needs} to signal or to start."]})
    if data.get("faults") is not None:
        raise ValidationError({"faults": ["Not with signal."]})
    try:
        execution, started = execution_signal_with_start(
            version=version,
            input=input,
            idempotency_key=key,
            name=data["signal"]["name"],
            data=data["signal"]["data"],
            by=request.user.get_username(),
            start_at=data.get("start_at"),
            priority=data["priority"],
            tags=data["tags"],
        )
    except ConcurrencyKeyError as exc:
        raise ValidationError({"input": [str(exc)]}) from None
    code = status.HTTP_201_CREATED if started else status.HTTP_200_OK
    return Response(ExecutionSerializer(execution).data, status=code)


class ExecutionDetail(EngineRetrieveView):
    serializer_class = ExecutionSerializer
    lookup_url_kwarg = "execution_id"
    queryset = Execution.objects.select_related("workflow", "version")

    def get_object(self) -> Execution:
        execution = execution_or_gone(self.kwargs["execution_id"], self.get_queryset())
        self.check_object_permissions(self.request, execution)
        return execution


def _execution(execution_id) -> Execution:
    return execution_or_gone(execution_id)


class TaskList(EngineListView):
    serializer_class = TaskSerializer
    pagination_class = LogPage

    def get_queryset(self):
        return selectors.task_list(execution=_execution(self.kwargs["execution_id"]))


class TaskDetail(EngineView):
    """One node with its latest attempts and events, each capped at
    WORKFLOW_API_TASK_DETAIL_ITEMS; the whole log is at events?node_id=<node_id>."""

    @extend_schema(responses=TaskDetailSerializer)
    def get(self, request: Request, execution_id, node_id: str) -> Response:
        execution = _execution(execution_id)
        task = get_object_or_404(selectors.task_list(execution=execution), node_id=node_id)
        cap = engine_settings.API_TASK_DETAIL_ITEMS
        attempts, attempts_total = selectors.latest(
            selectors.attempt_list(execution=execution, node_id=node_id), "attempt", cap
        )
        events, events_total = selectors.latest(
            selectors.event_list(execution=execution, node_id=node_id), "seq", cap
        )
        body = TaskSerializer(task).data
        body["attempt_history"] = AttemptSerializer(attempts, many=True).data
        body["attempts_total"] = attempts_total
        body["events"] = EventSerializer(events, many=True).data
        body["events_total"] = events_total
        return Response(body)


#: The longest ?wait= of GET .../events, in seconds: a long poll never holds a request longer.
MAX_WAIT_SECONDS = 30


class EventList(EngineListView):
    """The log by seq, in keyset pages (`next` carries after_seq); with ?wait=S a long
    poll: answers as soon as an event after after_seq exists, or after S seconds with an
    empty page."""

    serializer_class = EventSerializer
    pagination_class = SeqPage

    @extend_schema(
        parameters=[
            query_parameter(
                "after_seq",
                "Only events with a greater seq (tail from here).",
                type="integer",
                minimum=0,
                maximum=MAX_INT32,
            ),
            query_parameter(
                "node_id", "Only this node's events.", type="string", minLength=1, maxLength=80
            ),
            query_parameter(
                "wait",
                "Long poll: wait up to this many seconds for an event after after_seq "
                "(and node_id), answering as soon as one exists; an empty page after that.",
                type="integer",
                minimum=0,
                maximum=MAX_WAIT_SECONDS,
            ),
        ]
    )
    def get(self, request: Request, *args, **kwargs) -> Response:
        wait = query_int(request, "wait", default=0, maximum=MAX_WAIT_SECONDS)
        if wait:
            wait_for_rows(self.get_queryset(), seconds=wait)
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        execution = _execution(self.kwargs["execution_id"])
        return selectors.event_list(
            execution=execution,
            after_seq=query_int(self.request, "after_seq", default=0, maximum=MAX_INT32),
            node_id=query_text(self.request, "node_id", max_length=80),
        )
