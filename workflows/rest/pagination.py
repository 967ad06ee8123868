"""Every list is paginated with a capped page size, and its limit/offset parsed strictly.

DRF's LimitOffsetPagination silently ignores a bad ?limit= and honours any size up to
max_limit only when max_limit is set; here a bad value is a 400 naming the parameter, and
every class has a max_limit, documented in the schema as the parameter's maximum.
"""

from __future__ import annotations

from typing import Any

from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param

from workflows.conf import engine_settings
from workflows.rest.fields import MAX_INT32
from workflows.rest.parsers import query_int


class Page(LimitOffsetPagination):
    """/workflows, /executions, /schedules, a workflow's versions."""

    default_limit = 50
    max_limit: int = engine_settings.API_MAX_PAGE_SIZE
    max_offset = MAX_INT32

    def get_limit(self, request: Request) -> int:
        return query_int(
            request,
            self.limit_query_param,
            default=self.default_limit,
            minimum=1,
            maximum=self.max_limit,
        )

    def get_offset(self, request: Request) -> int:
        return query_int(request, self.offset_query_param, default=0, maximum=self.max_offset)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        bounds = {
            self.limit_query_param: {
                "minimum": 1,
                "maximum": self.max_limit,
                "default": self.default_limit,
            },
            self.offset_query_param: {"minimum": 0, "maximum": self.max_offset, "default": 0},
        }
        for parameter in parameters:
            parameter["schema"].update(bounds.get(parameter["name"], {}))
        return parameters


class LogPage(Page):
    """An execution's tasks and events: larger pages, still capped."""

    default_limit = 500
    max_limit: int = engine_settings.API_MAX_LOG_PAGE_SIZE


class CountlessPage(Page):
    """limit/offset without COUNT(*): one row past the page says whether there is a next.
    A count costs a scan of every matching row (40 ms at 100,000 executions, more under a
    filter); a page, an index range. The body is {"next", "previous", "results"}."""

    def paginate_queryset(self, queryset: Any, request: Request, view: Any = None) -> list[Any]:
        self.request = request
        self.limit = self.get_limit(request)
        self.offset = self.get_offset(request)
        rows = list(queryset[self.offset : self.offset + self.limit + 1])
        self.more = len(rows) > self.limit
        self.rows = rows[: self.limit]
        return self.rows

    def get_next_link(self) -> str | None:
        if not self.more or self.request is None:
            return None
        url = self.request.build_absolute_uri()
        return replace_query_param(
            url, self.offset_query_param, (self.offset or 0) + len(self.rows)
        )

    def get_paginated_response(self, data: Any) -> Response:
        return Response(
            {"next": self.get_next_link(), "previous": self.get_previous_link(), "results": data}
        )

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        link = {"type": "string", "nullable": True, "format": "uri"}
        return {
            "type": "object",
            "required": ["results"],
            "properties": {"next": link, "previous": link, "results": schema},
        }


class SeqPage(CountlessPage):
    """An execution's events: keyset pages on seq. The view filters seq > after_seq; `next`
    is the same query with after_seq set to the page's last seq (offset dropped), so a
    page costs an index range scan whatever the history's length. `previous` is null: the
    log is read forward (after_seq=0 starts again)."""

    default_limit = LogPage.default_limit
    max_limit = LogPage.max_limit

    def get_next_link(self) -> str | None:
        if not self.more or self.request is None:
            return None
        url = remove_query_param(self.request.build_absolute_uri(), self.offset_query_param)
        return replace_query_param(url, "after_seq", self.rows[-1].seq)

    def get_previous_link(self) -> str | None:
        return None
