"""Schedules API: each view validates the request shape, then makes one service or
selector call. Services raise Django ValidationErrors keyed by field (cron, timezone,
version), which workflows.rest.errors turns into 400s."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema_view
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from executions.schedules import selectors
from executions.schedules.backfill import schedule_backfill
from executions.schedules.models import Schedule
from executions.schedules.serializers import (
    BackfillResultSerializer,
    BackfillSerializer,
    ScheduleCreateSerializer,
    ScheduleSerializer,
    ScheduleUpdateSerializer,
)
from executions.schedules.services import schedule_create, schedule_delete, schedule_update
from executions.selectors import workflow_named
from workflows.rest.detail import Detail
from workflows.rest.openapi import extend_schema
from workflows.rest.views import EngineListView, EngineView


def _schedule(schedule_id: str) -> Schedule:
    schedule = selectors.schedule_get(schedule_id=schedule_id)
    if schedule is None:
        raise NotFound(f"No schedule with id '{schedule_id}'.")
    return schedule


class ScheduleListCreate(EngineListView):
    serializer_class = ScheduleSerializer

    def get_queryset(self):
        return selectors.schedule_list()

    @extend_schema(request=ScheduleCreateSerializer, responses={201: ScheduleSerializer})
    def post(self, request: Request) -> Response:
        body = ScheduleCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        workflow = workflow_named(data["workflow"])
        schedule = schedule_create(
            workflow=workflow,
            version=data.get("version"),
            cron=data["cron"],
            timezone_name=data["timezone"],
            input={} if data["input"] is None else data["input"],
            enabled=data["enabled"],
            overlap=data["overlap"],
            catchup=data["catchup"],
            catchup_window_seconds=data["catchup_window_seconds"],
            jitter_seconds=data["jitter_seconds"],
            by=request.user.get_username(),
        )
        created = _schedule(str(schedule.pk))
        return Response(ScheduleSerializer(created).data, status=status.HTTP_201_CREATED)


@extend_schema(
    parameters=[OpenApiParameter("schedule_id", OpenApiTypes.UUID, OpenApiParameter.PATH)]
)
@extend_schema_view(
    patch=extend_schema(request=ScheduleUpdateSerializer, responses=ScheduleSerializer)
)
class ScheduleDetail(Detail):
    serializer_class = ScheduleSerializer
    update_serializer_class = ScheduleUpdateSerializer

    def find(self, key: str) -> Schedule:
        return _schedule(key)

    def change(self, request: Request, resource: Schedule, changes: dict[str, Any]) -> None:
        schedule_update(schedule=resource, changes=changes, by=request.user.get_username())

    @extend_schema(responses={204: None})
    def delete(self, request: Request, schedule_id: str) -> Response:
        schedule_delete(schedule=_schedule(schedule_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema(
    parameters=[OpenApiParameter("schedule_id", OpenApiTypes.UUID, OpenApiParameter.PATH)]
)
class ScheduleBackfill(EngineView):
    """Run the schedule's fire times in [start, end] that have not run yet."""

    @extend_schema(
        request=BackfillSerializer,
        responses={202: BackfillResultSerializer},
        description="One execution per fire time t with start <= t <= end (at most "
        "WORKFLOW_BACKFILL_MAX of them, else 400); a fire time that already ran starts "
        "nothing new, so a repeat of a backfill starts nothing.",
    )
    def post(self, request: Request, schedule_id: str) -> Response:
        schedule = _schedule(schedule_id)
        body = BackfillSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        done = schedule_backfill(
            schedule=schedule, start=body.validated_data["start"], end=body.validated_data["end"]
        )
        result = {
            "schedule_id": schedule.pk,
            "started": done.started,
            "already_ran": done.already_ran,
        }
        return Response(BackfillResultSerializer(result).data, status=status.HTTP_202_ACCEPTED)
