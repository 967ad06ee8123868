"""The base of every engine view: the engine's own DRF settings on the view itself, so the
project's REST_FRAMEWORK defaults neither weaken the engine's API (a project's
IsAuthenticated would let any user start and cancel everything) nor break it (its
pagination, exception handler, parsers or versioning would change every answer), and the
engine sets nothing project-wide that would change the project's own API.

What DRF reads from REST_FRAMEWORK per view is set here; a view class may still set its
own (the health check's authentication, the metrics' content negotiation).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rest_framework import generics
from rest_framework.authentication import SessionAuthentication
from rest_framework.metadata import SimpleMetadata
from rest_framework.negotiation import BaseContentNegotiation, DefaultContentNegotiation
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.schemas.inspectors import DefaultSchema, ViewInspector
from rest_framework.views import APIView

from workflows.rest.auth import TokenAuthentication
from workflows.rest.errors import exception_handler
from workflows.rest.openapi import AutoSchema
from workflows.rest.pagination import Page
from workflows.rest.parsers import StrictJSONParser
from workflows.rest.permissions import RoutePermission


class EngineJSONRenderer(JSONRenderer):
    """DRF's JSON as its defaults make it (compact, UTF-8, no NaN or Infinity), whatever
    the project's COMPACT_JSON, UNICODE_JSON and STRICT_JSON."""

    ensure_ascii = False
    compact = True
    strict = True


class EngineSchema(DefaultSchema):
    """DRF's DefaultSchema with the engine's AutoSchema instead of the project's
    DEFAULT_SCHEMA_CLASS: a fresh one for each view, as DRF makes them."""

    def __get__(self, instance: Any, owner: Any) -> Any:
        result = ViewInspector.__get__(self, instance, owner)
        if not isinstance(result, EngineSchema):
            return result  # set on the view itself (drf-spectacular's extend_schema)
        inspector = AutoSchema()
        inspector.view = instance
        return inspector


class EngineAccess(APIView):
    """Who may call an engine view and how its errors answer: what every engine view has,
    the schema and documentation pages included."""

    # Token first: its WWW-Authenticate header turns an anonymous request into a 401.
    authentication_classes = [TokenAuthentication, SessionAuthentication]
    # Each route and method needs the Django permission workflows/rest/permissions.py
    # maps it to; a route it does not know is refused.
    permission_classes = [RoutePermission]
    throttle_classes = []
    content_negotiation_class: type[BaseContentNegotiation] = DefaultContentNegotiation
    versioning_class = None
    schema = EngineSchema()

    def get_exception_handler(self) -> Callable[[Exception, dict[str, Any]], Any]:
        return exception_handler


class EngineView(EngineAccess):
    """Everything else DRF takes from the project's REST_FRAMEWORK for a view."""

    # JSON only: a form or multipart body is a 415 (multipart file parts would otherwise
    # be streamed past DATA_UPLOAD_MAX_MEMORY_SIZE).
    parser_classes = [StrictJSONParser]
    renderer_classes = [EngineJSONRenderer, BrowsableAPIRenderer]
    metadata_class = SimpleMetadata  # type: ignore[assignment]  # the stubs want an instance


class EngineGenericView(EngineView, generics.GenericAPIView):
    # Every list is paginated, its page size capped (workflows/rest/pagination.py).
    pagination_class = Page
    # A view that filters says how: the project's DEFAULT_FILTER_BACKENDS are not the
    # engine's.
    filter_backends = []


class EngineListView(EngineGenericView, generics.ListAPIView):
    pass


class EngineRetrieveView(EngineGenericView, generics.RetrieveAPIView):
    pass
