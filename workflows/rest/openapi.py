"""drf-spectacular: the schema documents every response an operation can give.

Success bodies come from each view's serializers. The error responses follow from what
the operation has (its parameters, body and path), so they are added here once rather than on every
view: 400 when it takes parameters or a body, 401 and 403 unless it is public, 404 when
its path names an object, 410 when it names an execution (a purged one answers with its
tombstone), 413 and 415 when it takes a JSON body. A 409 depends on the operation: views
that can refuse in the current status declare `409: CONFLICT`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, Literal, TypeVar

from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from drf_spectacular.utils import extend_schema as spectacular_extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny

from workflows.rest.parsers import IDEMPOTENCY_KEY_MAX

Endpoint = tuple[str, str, str, Any]
F = TypeVar("F", bound=Callable[..., Any])


class ErrorSerializer(serializers.Serializer):
    """Every error body: a "detail" sentence; a 400 adds each bad field's messages under
    its name, and a rejected definition adds "errors": [{"node", "field", "message"}]."""

    detail = serializers.CharField(help_text="What is wrong, and how to fix it.")


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


class TombstoneSerializer(serializers.Serializer):
    """What a purged execution left: its id answers 410 with exactly these fields (and an
    archive of its history verifies against `events` and `last_hash`)."""

    id = serializers.UUIDField()
    workflow = serializers.CharField()
    version = serializers.IntegerField()
    status = serializers.CharField(help_text="The status it ended with.")
    ended_at = serializers.DateTimeField(allow_null=True)
    purged_at = serializers.DateTimeField()
    events = serializers.IntegerField(help_text="How many events its log held (its last seq).")
    last_hash = serializers.CharField(help_text="The hash of its last event.")


#: Every route under /executions/{execution_id} reads the execution through
#: executions/retention/tombstones.py's execution_or_gone.
_GONE = OpenApiResponse(TombstoneSerializer, description="The execution was purged: its tombstone.")
#: The path parameter that names an execution.
_EXECUTION_PARAMETER = "{execution_id}"

CONFLICT = _error(
    "Not allowed in the current status (or an Idempotency-Key reused with another body)."
)

_ERRORS: dict[str, OpenApiResponse] = {
    "400": _error("Invalid input: a parameter, a body field or the definition."),
    "401": _error("No or an invalid token (send Authorization: Token <key>) or session."),
    "403": _error("Authenticated, but without the permission this operation needs."),
    "404": _error("No such object."),
    "410": _GONE,
    "413": _error("Request body too large (DATA_UPLOAD_MAX_MEMORY_SIZE)."),
    "415": _error("Only application/json bodies are accepted."),
}


def query_parameter(name: str, description: str, **schema: Any) -> OpenApiParameter:
    """A query parameter with its JSON Schema (type, bounds) spelled out, so that what
    workflows.rest.parsers refuses is exactly what the schema calls invalid."""
    return OpenApiParameter(name, schema, OpenApiParameter.QUERY, description=description)


def idempotency_header(description: str) -> OpenApiParameter:
    """The Idempotency-Key header, as workflows.rest.parsers.idempotency_key reads it."""
    schema = {"type": "string", "minLength": 1, "maxLength": IDEMPOTENCY_KEY_MAX}
    return OpenApiParameter(
        "Idempotency-Key", schema, OpenApiParameter.HEADER, description=description
    )


#: Set while the engine's own document is made (workflows/rest/schema.py): any other, a
#: project's own or drf-spectacular's deploy check, leaves the engine's routes out.
ENGINE_DOCUMENT: ContextVar[bool] = ContextVar("engine_document", default=False)


#: The module of the bases every engine view shares: their docstrings describe the base.
_BASES_MODULE = "workflows.rest.views"


class AutoSchema(SpectacularAutoSchema):
    def is_excluded(self) -> bool:
        return not ENGINE_DOCUMENT.get() or super().is_excluded()

    # drf-spectacular's get_description takes no path and method (DRF's stubs' does).
    def get_description(self) -> str:  # type: ignore[override]
        """The view's or its action's own docstring. drf-spectacular falls back on the base
        classes' docstrings: every view without one of its own would be described as what
        the engine's base view is."""
        description = str(super().get_description())
        shared = {
            inspect.cleandoc(doc)
            for base in type(self.view).__mro__
            if base.__module__ == _BASES_MODULE and (doc := base.__dict__.get("__doc__"))
        }
        return "" if description in shared else description

    def _get_request_body(self, direction: Literal["request", "response"] = "request") -> Any:
        body = super()._get_request_body(direction)
        # A body given as a raw JSON Schema (a oneOf a serializer cannot express) is taken
        # as optional; a view that needs it says so.
        if body is not None and getattr(self.view, "request_body_required", False):
            body["required"] = True
        return body

    def _get_response_bodies(
        self, direction: Literal["request", "response"] = "response"
    ) -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        for code in self._error_codes():
            if code not in responses:
                responses[code] = self._get_response_for_code(_ERRORS[code], code)
        return responses

    def _error_codes(self) -> list[str]:
        has_body = self.method in ("POST", "PUT", "PATCH") and self._get_request_body()
        has_path_params = "{" in self.path
        takes_input = bool(has_body or has_path_params or self._get_parameters())
        public = all(isinstance(p, AllowAny) for p in self.view.get_permissions())
        codes = []
        if takes_input:
            codes.append("400")
        if not public:
            codes += ["401", "403"]
        if has_path_params:
            codes.append("404")
        if _EXECUTION_PARAMETER in self.path:
            codes.append("410")
        if has_body:
            codes += ["413", "415"]
        return codes


def extend_schema(**kwargs: Any) -> Callable[[F], F]:
    """drf-spectacular's extend_schema on the engine's AutoSchema, whatever the project's
    DEFAULT_SCHEMA_CLASS. On a view's method, drf-spectacular builds the method's schema on
    that setting as the module is imported (the view's own schema class is out of its
    sight there), and DRF's default is a class drf-spectacular cannot generate with."""
    decorate = spectacular_extend_schema(**kwargs)

    def decorator(f: F) -> F:
        if not inspect.isclass(f) and "schema" not in getattr(f, "kwargs", {}):
            # Where drf-spectacular looks first for the class a method's schema builds on.
            f.kwargs = {**getattr(f, "kwargs", {}), "schema": AutoSchema}  # type: ignore[attr-defined]
        decorated: F = decorate(f)
        return decorated

    return decorator


def drop_trailing_slash_duplicates(endpoints: list[Endpoint], **kwargs: Any) -> list[Endpoint]:
    """Document each route once: every path is served with and without a trailing slash
    (clients may use either), and listing both gives two operations with one operationId."""
    paths = {path for path, *_ in endpoints}
    return [
        endpoint
        for endpoint in endpoints
        if not (endpoint[0].endswith("/") and endpoint[0].rstrip("/") in paths)
    ]


def add_definition_components(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Register the definition's JSON Schema (workflows.definition_schema), which the
    serializers' DefinitionField refers to by $ref."""
    from workflows.definition_schema import components

    result.setdefault("components", {}).setdefault("schemas", {}).update(components())
    return result


def execution_statuses() -> list[tuple[str, str]]:
    """The Execution.status choices, for ENUM_NAME_OVERRIDES (labels included: they are
    part of what drf-spectacular matches on)."""
    from executions.engine.statuses import ExecutionStatus, choices

    return choices(ExecutionStatus)


def task_statuses() -> list[tuple[str, str]]:
    from executions.engine.statuses import TaskStatus, choices

    return choices(TaskStatus)
