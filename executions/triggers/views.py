"""Triggers and events API: each view validates the request, then calls one service."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_view
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from executions.selectors import workflow_named
from executions.triggers.models import Trigger
from executions.triggers.serializers import (
    EventAcceptedSerializer,
    EventCreateSerializer,
    TriggerCreateSerializer,
    TriggerSerializer,
    TriggerUpdateSerializer,
)
from executions.triggers.services import (
    event_publish,
    executions_of,
    trigger_create,
    trigger_update,
)
from workflows.rest.detail import Detail
from workflows.rest.openapi import extend_schema, idempotency_header
from workflows.rest.parsers import idempotency_key
from workflows.rest.views import EngineListView, EngineView

IDEMPOTENCY_KEY = idempotency_header(
    "Repeating an event with the same key returns the first one and starts nothing."
)


class TriggerListCreate(EngineListView):
    serializer_class = TriggerSerializer
    queryset = Trigger.objects.select_related("workflow", "version").order_by("name")

    @extend_schema(request=TriggerCreateSerializer, responses={201: TriggerSerializer})
    def post(self, request: Request) -> Response:
        body = TriggerCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        workflow = workflow_named(data["workflow"])
        trigger = trigger_create(
            name=data["name"],
            event=data["event"],
            workflow=workflow,
            version=data.get("version"),
            input=data["input"],
            filter=data["filter"],
            enabled=data["enabled"],
            by=request.user.get_username(),
        )
        return Response(TriggerSerializer(trigger).data, status=status.HTTP_201_CREATED)


def _trigger(name: str) -> Trigger:
    trigger = Trigger.objects.select_related("workflow", "version").filter(name=name).first()
    if trigger is None:
        raise NotFound(f"No trigger named '{name}'.")
    return trigger


@extend_schema_view(
    patch=extend_schema(request=TriggerUpdateSerializer, responses=TriggerSerializer)
)
class TriggerDetail(Detail):
    serializer_class = TriggerSerializer
    update_serializer_class = TriggerUpdateSerializer

    def find(self, key: str) -> Trigger:
        return _trigger(key)

    def change(self, request: Request, resource: Trigger, changes: dict[str, Any]) -> None:
        trigger_update(trigger=resource, changes=changes)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, name: str) -> Response:
        _trigger(name).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


class EventCreate(EngineView):
    @extend_schema(
        request=EventCreateSerializer,
        parameters=[IDEMPOTENCY_KEY],
        responses={202: EventAcceptedSerializer},
    )
    def post(self, request: Request) -> Response:
        body = EventCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        key = idempotency_key(request)
        event = event_publish(
            key=body.validated_data["key"],
            data=body.validated_data["data"],
            idempotency_key=key,
            by=request.user.get_username(),
        )
        accepted = {"id": str(event.pk), "executions": executions_of(event)}
        return Response(accepted, status=status.HTTP_202_ACCEPTED)
