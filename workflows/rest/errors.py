"""The API's exception handler: every error is JSON with a "detail", and no request,
however malformed, turns into a 500.

DRF's handler covers its own exceptions, Http404 and PermissionDenied; this adds the
ones services and Django raise: the services' refusals (workflows.refusals, each with its
own status), model ValidationError and DefinitionError (400), an oversized body (413),
other suspicious requests and over-deep JSON (400).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DataError
from django.http import HttpRequest, JsonResponse
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.serializers import as_serializer_error
from rest_framework.views import exception_handler as drf_exception_handler

from workflows.dsl import DefinitionError
from workflows.refusals import Refused

#: How many problems the one-line "detail" spells out before "and N more".
_SUMMARIZED = 5


def _summary(lines: list[str], prefix: str) -> str:
    shown = "; ".join(lines[:_SUMMARIZED])
    more = f"; and {len(lines) - _SUMMARIZED} more" if len(lines) > _SUMMARIZED else ""
    return f"{prefix}: {shown}{more}" if lines else prefix


def definition_error_body(exc: DefinitionError) -> dict[str, Any]:
    """{"detail": summary, "errors": [{"node", "field", "message"}, ...]}."""
    count = len(exc.problems)
    prefix = f"Invalid definition ({count} problem{'s' if count != 1 else ''})"
    return {
        "detail": _summary([str(p) for p in exc.problems], prefix),
        "errors": [p.as_dict() for p in exc.problems],
    }


def _messages(data: Any, path: str = "") -> list[str]:
    if isinstance(data, dict):
        return [m for key, value in data.items() for m in _messages(value, _join(path, key))]
    if isinstance(data, list):
        return [m for value in data for m in _messages(value, path)]
    return [f"{path}: {data}" if path else str(data)]


def _join(path: str, key: object) -> str:
    key = "" if key == "non_field_errors" else str(key)
    return ".".join(part for part in (path, key) if part)


def _with_detail(data: Any) -> dict[str, Any]:
    """Field errors stay keyed by field (clients look them up), with a "detail" added."""
    if isinstance(data, dict) and "detail" in data:
        return data
    summary = _summary(_messages(data), "Invalid request")
    if isinstance(data, dict):
        return {"detail": summary, **data}
    return {"detail": summary, "non_field_errors": data}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, Refused):
        return Response(exc.body(), status=exc.status_code)
    if isinstance(exc, DefinitionError):
        return Response(definition_error_body(exc), status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return Response(
            {"detail": f"Request body too large: at most {limit} bytes are accepted."},
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    if isinstance(exc, SuspiciousOperation):
        return Response({"detail": f"Bad request: {exc}"}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, RecursionError):
        # json.loads of a body nested thousands deep; the parser only catches ValueError.
        return Response(
            {"detail": "JSON parse error - nested too deeply."}, status=status.HTTP_400_BAD_REQUEST
        )
    if isinstance(exc, DataError) or (isinstance(exc, ValueError) and "NUL" in str(exc)):
        # A value the database refuses (a NUL in a query string or path, a number out of
        # range): the client's input, so a 400, never a 500.
        return Response(
            {"detail": f"A value in the request cannot be stored or searched: {exc}"},
            status=status.HTTP_400_BAD_REQUEST,
        )
    if isinstance(exc, DjangoValidationError):
        exc = ValidationError(detail=as_serializer_error(exc))
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(exc, ValidationError):
        response.data = _with_detail(response.data)
    return response


def not_found(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    """Django's 404 for a path no route matches (an id that is not a UUID, say): JSON with
    a "detail" like every other API error, not an HTML page."""
    return JsonResponse({"detail": f"Not found: no route for {request.path[:200]!r}."}, status=404)


def server_error(request: HttpRequest) -> JsonResponse:
    """A bug, not the client's fault; the traceback is in the log, not the response."""
    return JsonResponse({"detail": "Internal server error."}, status=500)
