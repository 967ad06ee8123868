"""GET /healthz (anonymous, for load balancers) and GET /metrics (Prometheus)."""

from __future__ import annotations

from django.db import DatabaseError
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, inline_serializer
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from rest_framework import serializers, status
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from executions.metrics.health import health_report
from executions.metrics.metrics import metrics_text
from workflows.rest.openapi import extend_schema
from workflows.rest.views import EngineView

_HEALTH = inline_serializer(
    "Health",
    {
        "status": serializers.CharField(help_text="ok, or unavailable if any check failed."),
        "database": serializers.CharField(help_text="ok, or the error of SELECT 1."),
        "broker": serializers.CharField(help_text="ok, or the error connecting to it."),
        "sweeper": inline_serializer(
            "SweeperHealth",
            {
                "state": serializers.ChoiceField(
                    choices=["ok", "stale", "never", "unknown"],
                    help_text="stale: no sweep completed within stale_after_seconds (beat or "
                    "the orchestrator workers are down); never: none since the database was "
                    "made; unknown: the database could not be read. Does not change the "
                    "status code.",
                ),
                "last_sweep_at": serializers.DateTimeField(allow_null=True),
                "age_seconds": serializers.FloatField(allow_null=True),
                "stale_after_seconds": serializers.FloatField(),
            },
        ),
    },
)


class HealthView(EngineView):
    # No authentication at all: a probe carries no token, and a stale one must not 401.
    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(responses={200: _HEALTH, 503: _HEALTH}, auth=[])
    def get(self, request: Request) -> Response:
        healthy, body = health_report()
        code = status.HTTP_200_OK if healthy else status.HTTP_503_SERVICE_UNAVAILABLE
        return Response(body, status=code)


class _FirstRenderer(BaseContentNegotiation):
    """Scrapers send Accept headers DRF's renderers do not list: the text body is built
    here anyway, and errors (401, 503) are JSON whatever was asked for."""

    def select_parser(self, request, parsers):
        return parsers[0]

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class MetricsView(EngineView):
    content_negotiation_class = _FirstRenderer

    # Permissions: workflows.rest.permissions (executions.view_execution, or anyone when
    # WORKFLOW_METRICS_PUBLIC is on, read per request).

    @extend_schema(
        responses={
            (200, "text/plain"): OpenApiResponse(
                OpenApiTypes.STR, description="Prometheus text exposition format 0.0.4."
            )
        }
    )
    def get(self, request: Request) -> HttpResponse | Response:
        try:
            body = metrics_text()
        except DatabaseError as exc:
            return Response(
                {"detail": f"Metrics are unavailable: the database failed ({exc})."[:300]},
                status=status.HTTP_503_SERVICE_UNAVAILABLE,
            )
        return HttpResponse(body, content_type=CONTENT_TYPE_PLAIN_0_0_4)
