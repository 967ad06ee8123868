"""`http`: one HTTP request, sent by a worker (nodes/executors/http.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from workflows.dsl.checks import Collector, describe, quote
from workflows.dsl.references import check_templates
from workflows.kinds.base import JSON, NodeKind, spec_of
from workflows.kinds.fields import Required

if TYPE_CHECKING:
    from workflows.dsl.model import NodeBody, RetryPolicy
    from workflows.dsl.place import Place

HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
REQUEST_FIELDS = ("method", "url", "headers", "params", "json", "body")
REQUEST = Required(("request",), 'an object like {"method": "GET", "url": "https://..."}')
URL = Required(("url",), "an http:// or https:// URL")
_STATUS = {"type": "integer", "minimum": 100, "maximum": 599}


def _any_case(word: str) -> str:
    return "".join(f"[{letter}{letter.lower()}]" for letter in word)


REQUEST_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    **URL.schema(),
    "not": {"required": ["json", "body"], "description": "json or body, not both."},
    "properties": {
        "method": {
            "type": "string",
            "pattern": f"^({'|'.join(_any_case(method) for method in HTTP_METHODS)})$",
            "description": f"One of {', '.join(HTTP_METHODS)}, any case (default GET).",
        },
        "url": {
            "type": "string",
            # What _request takes: an http(s) URL, or a template that renders one.
            "pattern": r"^https?://|\{\{",
            "description": "http:// or https://, may hold templates.",
        },
        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
        "params": {"type": "object"},
        "json": {"description": "Any JSON; strings may hold {{ templates }}."},
        "body": {"type": "string"},
    },
}


@dataclass(frozen=True)
class HttpSpec:
    #: method, url, headers, params, json or body (templates allowed anywhere).
    request: Mapping[str, JSON] | None = None
    #: The accepted status codes; None means any 2xx.
    success_status: tuple[int, ...] | None = None


class HttpKind(NodeKind):
    name = "http"
    fields = ("request", "success_status")
    article = "an"
    runs_on_worker = True
    executor = "nodes.executors.entries:http"
    schema: ClassVar[Mapping[str, Any]] = {
        "request": {**REQUEST_SCHEMA, "description": "http: the request to send."},
        "success_status": {
            "oneOf": [_STATUS, {"type": "array", "minItems": 1, "items": _STATUS}],
            "description": "http: the status, or statuses, that count as success (default 2xx).",
        },
    }
    requires = (REQUEST,)

    def template(self, node: NodeBody) -> JSON:
        return spec_of(node, HttpSpec).request  # an http node renders its request

    def parse(
        self, c: Collector, raw: Mapping[str, Any], place: Place, policy: RetryPolicy
    ) -> HttpSpec:
        kwargs: dict[str, Any] = {}
        if "request" in raw:
            kwargs["request"] = _request(c, raw["request"], place)
        if "success_status" in raw:
            kwargs["success_status"] = _statuses(c, raw["success_status"], place)
        return HttpSpec(**kwargs)


def _request(c: Collector, raw: object, place: Place) -> dict[str, Any] | None:
    node, at = place.scope.node, place.prefix + "request"
    request = c.mapping(raw, node=node, field=at, what='an object like {"method": ..., "url": ...}')
    if request is None:
        return None
    c.unknown_keys(request, REQUEST_FIELDS, node=node, prefix=at + ".", what="a request")
    method = request.get("method", "GET")
    if not isinstance(method, str) or method.upper() not in HTTP_METHODS:
        shown = quote(method) if isinstance(method, str) else describe(method)
        c.add(
            f"must be one of {', '.join(HTTP_METHODS)} (got {shown})",
            node=node,
            field=at + ".method",
        )
    url = request.get("url")
    is_url = isinstance(url, str) and (url.startswith(("http://", "https://")) or "{{" in url)
    if URL.check(c, request, node=node, prefix=at + ".") and not is_url:
        got = quote(url) if isinstance(url, str) else describe(url)
        c.add(f"must be an http:// or https:// URL (got {got})", node=node, field=at + ".url")
    for key in ("headers", "params"):
        if key in request:
            c.mapping(request[key], node=node, field=f"{at}.{key}", what="an object")
    headers = request.get("headers")
    if isinstance(headers, Mapping):
        for name, value in headers.items():
            if not isinstance(value, str):
                c.add(
                    f"header values must be strings (got {describe(value)})",
                    node=node,
                    field=f"{at}.headers.{name}",
                )
    if "json" in request and "body" in request:
        c.add("give either json or body, not both", node=node, field=at + ".body")
    elif "body" in request and not isinstance(request["body"], str):
        c.add(
            f"must be a string; send JSON with json (got {describe(request['body'])})",
            node=node,
            field=at + ".body",
        )
    check_templates(c, dict(request), scope=place.scope, field=at)
    normalized = dict(request)
    normalized["method"] = method.upper() if isinstance(method, str) else method
    return normalized


def _statuses(c: Collector, raw: object, place: Place) -> tuple[int, ...] | None:
    codes = raw if isinstance(raw, list) else [raw]
    valid = all(isinstance(v, int) and not isinstance(v, bool) and 100 <= v <= 599 for v in codes)
    if not codes or not valid:
        c.add(
            "must be a status code or a list of them, each an integer 100-599, e.g. [200, 201]",
            node=place.scope.node,
            field=place.prefix + "success_status",
        )
        return None
    return tuple(codes)


KIND = HttpKind()
