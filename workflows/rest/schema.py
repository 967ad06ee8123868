"""The engine's OpenAPI document (/schema) and its two pages (/docs, /redoc), with the
engine's drf-spectacular settings on the views themselves: a project needs no
SPECTACULAR_SETTINGS of the engine's and keeps its own for its own document. The engine's
document holds the engine's routes only, under whatever prefix the project mounts them,
and the project's own document none of them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from django.http import HttpRequest, HttpResponseBase
from drf_spectacular import plumbing
from drf_spectacular.settings import patched_settings
from drf_spectacular.views import (
    SCHEMA_KWARGS,
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerView,
)
from rest_framework.request import Request
from rest_framework.response import Response

from workflows.rest.openapi import ENGINE_DOCUMENT, Endpoint, extend_schema
from workflows.rest.views import EngineAccess

TITLE = "Workflow engine API"

#: drf-spectacular's settings for the engine's document, applied while its views answer.
SETTINGS: dict[str, Any] = {
    "TITLE": TITLE,
    "DESCRIPTION": "Versioned DAG workflows on Celery; the event log is the source of truth.",
    "VERSION": "0.1.0",
    "PREPROCESSING_HOOKS": [
        "workflows.rest.schema.engine_endpoints_only",
        # Every route is served with and without a trailing slash; document it once.
        "workflows.rest.openapi.drop_trailing_slash_duplicates",
    ],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "workflows.rest.openapi.add_definition_components",
    ],
    # Request and response components apart: a 400 for a read-only field is not implied.
    "COMPONENT_SPLIT_REQUEST": True,
    # Three models have a "status": name each enum after its own.
    "ENUM_NAME_OVERRIDES": {
        "ExecutionStatusEnum": "workflows.rest.openapi.execution_statuses",
        "TaskStatusEnum": "workflows.rest.openapi.task_statuses",
        "AttemptStatusEnum": "executions.models.AttemptStatus",
    },
    # Swagger UI and Redoc served from drf-spectacular-sidecar: nothing from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}


def engine_endpoints_only(endpoints: list[Endpoint], **kwargs: Any) -> list[Endpoint]:
    """The engine's routes: not the project's own API beside them."""
    return [
        endpoint
        for endpoint in endpoints
        if issubclass(getattr(endpoint[3], "cls", object), EngineAccess)
    ]


@contextlib.contextmanager
def engine_document() -> Iterator[None]:
    """The engine's document is being made: its settings apply and its routes are in it.
    drf-spectacular keeps the enum names of the settings it first read (per language)
    until cleared: cleared on the way in and out, so neither the project's document nor
    the engine's gets the other's."""
    overrides = getattr(plumbing, "_load_enum_name_overrides", None)
    clear = getattr(overrides, "cache_clear", lambda: None)
    clear()
    token = ENGINE_DOCUMENT.set(True)
    try:
        with patched_settings(SETTINGS):
            yield
    finally:
        ENGINE_DOCUMENT.reset(token)
        clear()


class _EngineDocument(EngineAccess):
    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        with engine_document():
            return super().dispatch(request, *args, **kwargs)


# drf-spectacular's views document their `get` on the project's DEFAULT_SCHEMA_CLASS:
# documented again here, on the engine's.
class SchemaView(_EngineDocument, SpectacularAPIView):
    @extend_schema(**SCHEMA_KWARGS)
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)


class SwaggerView(_EngineDocument, SpectacularSwaggerView):
    title = TITLE

    @extend_schema(exclude=True)
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)


class RedocView(_EngineDocument, SpectacularRedocView):
    title = TITLE

    @extend_schema(exclude=True)
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)
