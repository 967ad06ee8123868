"""Parsing of node bodies: the fields that say what a node does, per type.

The same code parses a graph node, a `compensation` and a map's per-item `node`; a
`Place` says which of these it is, and so which fields and references are allowed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from workflows.dsl.checks import Collector, Scope, describe, no_secrets, quote
from workflows.dsl.delays import parse_delay
from workflows.dsl.model import NODE_TYPES, NodeBody, RetryPolicy
from workflows.dsl.policy import parse_policy
from workflows.dsl.references import check_items, check_templates

COMMON_FIELDS = ("type", "input", "retry_policy", "timeout_seconds", "heartbeat_timeout_seconds")
GRAPH_FIELDS = ("id", "depends_on", "when", "trigger_rule", "compensation")
TYPE_FIELDS: Mapping[str, tuple[str, ...]] = {
    "function": ("function",),
    "http": ("request", "success_status"),
    "delay": ("seconds", "until"),
    "approval": ("approvers",),
    "workflow": ("workflow", "version"),
    "map": ("items", "node", "max_parallel"),
}
#: Each timeout field and the bound of limits.py it is held to.
_TIMEOUT_BOUNDS = {
    "timeout_seconds": "max_timeout_seconds",
    "heartbeat_timeout_seconds": "max_heartbeat_timeout_seconds",
}
HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
REQUEST_FIELDS = ("method", "url", "headers", "params", "json", "body")
#: The same shape as WorkflowDefinition.name: a name outside it can never exist.
WORKFLOW_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,99}\Z")


@dataclass(frozen=True)
class Place:
    """Where a body sits, which decides the fields it may have and what it inherits."""

    scope: Scope
    #: Prefix of the body's fields in problems: "", "compensation." or "node.".
    prefix: str
    #: How problems name this kind of body when it is not a graph node.
    label: str | None
    #: The policy the body's own `retry_policy` is merged over.
    base_policy: RetryPolicy
    #: Why a map is not allowed here; None: it is.
    no_map: str | None = None

    def what(self, kind: str | None) -> str:
        if self.label:
            return self.label
        return f"{'an' if kind in ('http', 'approval') else 'a'} {kind} node" if kind else "a node"


def build_body(c: Collector, raw: object, place: Place) -> NodeBody | None:
    """A compensation or map body, as a NodeBody."""
    field = place.prefix.rstrip(".")
    body = c.mapping(raw, node=place.scope.node, field=field, what='an object like {"type": ...}')
    return None if body is None else NodeBody(**parse_body(c, body, place))


def parse_body(c: Collector, raw: Mapping[str, Any], place: Place) -> dict[str, Any]:
    """Keyword arguments for NodeBody (or Node, with the graph fields added)."""
    node, p = place.scope.node, place.prefix
    kind = raw.get("type")
    known = kind if isinstance(kind, str) and kind in NODE_TYPES else None
    if "type" not in raw:
        c.add(f"is required: one of {', '.join(NODE_TYPES)}", node=node, field=p + "type")
    elif known is None:
        shown = f"unknown type {quote(kind)}" if isinstance(kind, str) else f"got {describe(kind)}"
        c.add(
            f"must be one of {', '.join(NODE_TYPES)} ({shown})",
            node=node,
            field=p + "type",
        )
    elif known == "map" and place.no_map:
        c.add(place.no_map, node=node, field=p + "type")
        known = None
    _check_fields(c, raw, known, place)
    kwargs: dict[str, Any] = {"type": known or ""}
    if "input" in raw:
        check_templates(c, raw["input"], scope=place.scope, field=p + "input")
        kwargs["input"] = raw["input"]
    kwargs["retry_policy"] = place.base_policy
    if "retry_policy" in raw:
        kwargs["retry_policy"] = parse_policy(
            c, raw["retry_policy"], base=place.base_policy, node=node, field=p + "retry_policy"
        )
    for key, bound in _TIMEOUT_BOUNDS.items():
        if key in raw:
            seconds = c.number(raw[key], node=node, field=p + key, exclusive=True)
            kwargs[key] = c.within(seconds, bound, node=node, field=p + key)
    if known is not None:
        kwargs.update(_TYPE_PARSERS[known](c, raw, place, kwargs["retry_policy"]))
    return kwargs


def _check_fields(c: Collector, raw: Mapping[str, Any], kind: str | None, place: Place) -> None:
    graph = () if place.label else GRAPH_FIELDS
    own = TYPE_FIELDS[kind] if kind else tuple(f for fs in TYPE_FIELDS.values() for f in fs)
    allowed = {*COMMON_FIELDS, *own, *graph}
    for key in raw:
        if key in allowed:
            continue
        field = f"{place.prefix}{key}"
        owners = [t for t, fields in TYPE_FIELDS.items() if key in fields]
        if key in GRAPH_FIELDS:
            message = f"'{key}' is not allowed in {place.label}: only graph nodes have it"
        elif owners:
            message = f"'{key}' belongs to {'/'.join(owners)} nodes, not to {place.what(kind)}"
        else:
            shown = quote(key) if isinstance(key, str) else repr(key)
            listing = ", ".join(sorted(allowed))
            message = f"unknown field {shown} for {place.what(kind)}; allowed: {listing}"
        c.add(message, node=place.scope.node, field=field)


def _required(c: Collector, raw: Mapping[str, Any], key: str, place: Place, what: str) -> bool:
    if key not in raw:
        c.add(f"is required: {what}", node=place.scope.node, field=place.prefix + key)
        return False
    return True


Parser = Callable[[Collector, Mapping[str, Any], Place, RetryPolicy], dict[str, Any]]


def _function(c: Collector, raw: Mapping[str, Any], place: Place, _: RetryPolicy) -> dict[str, Any]:
    what = 'the name of a registered function, e.g. "std.echo"'
    if not _required(c, raw, "function", place, what):
        return {}
    field = place.prefix + "function"
    name = c.string(raw["function"], node=place.scope.node, field=field, what=what)
    if name is not None and c.function_exists is not None and not c.function_exists(name):
        c.add(
            f"unknown function {quote(name)}: register it with @workflow_function, "
            "or use a built-in such as std.echo",
            node=place.scope.node,
            field=field,
        )
    return {"function": name}


def _http(c: Collector, raw: Mapping[str, Any], place: Place, _: RetryPolicy) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    if _required(
        c, raw, "request", place, 'an object like {"method": "GET", "url": "https://..."}'
    ):
        kwargs["request"] = _request(c, raw["request"], place)
    if "success_status" in raw:
        kwargs["success_status"] = _statuses(c, raw["success_status"], place)
    return kwargs


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
    if "url" not in request:
        c.add("is required: an http:// or https:// URL", node=node, field=at + ".url")
    elif not isinstance(url, str) or not (url.startswith(("http://", "https://")) or "{{" in url):
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


def _workflow(c: Collector, raw: Mapping[str, Any], place: Place, _: RetryPolicy) -> dict[str, Any]:
    node, p = place.scope.node, place.prefix
    kwargs: dict[str, Any] = {}
    if _required(c, raw, "workflow", place, "the name of the workflow to run"):
        name = raw["workflow"]
        if not isinstance(name, str) or not WORKFLOW_NAME.match(name):
            got = quote(name) if isinstance(name, str) else describe(name)
            c.add(
                f"must be a workflow name: lowercase letters, digits, '-' and '_' (got {got})",
                node=node,
                field=p + "workflow",
            )
        else:
            kwargs["workflow"] = name
    if "version" in raw:
        kwargs["version"] = c.integer(raw["version"], node=node, field=p + "version", minimum=1)
    return kwargs


def _map(c: Collector, raw: Mapping[str, Any], place: Place, policy: RetryPolicy) -> dict[str, Any]:
    node, p = place.scope.node, place.prefix
    kwargs: dict[str, Any] = {}
    if _required(c, raw, "items", place, "an expression that yields a list, e.g. input.items"):
        kwargs["items"] = check_items(
            c, raw["items"], scope=no_secrets(place.scope), field=p + "items"
        )
    if _required(c, raw, "node", place, 'the body run per item, e.g. {"type": "function", ...}'):
        body = Place(
            scope=Scope(node=node, owner=place.scope.owner, in_map=True),
            prefix=p + "node.",
            label="a map's node body",
            base_policy=policy,
            no_map="a map's node cannot be a map: run the inner fan-out in a sub-workflow",
        )
        kwargs["node"] = build_body(c, raw["node"], body)
    if "max_parallel" in raw:
        parallel = c.integer(raw["max_parallel"], node=node, field=p + "max_parallel")
        kwargs["max_parallel"] = c.within(
            parallel, "map_max_parallel", node=node, field=p + "max_parallel"
        )
    return kwargs


#: An approver: "group:<name>" or "user:<username>" (Django's own groups and users).
APPROVER = re.compile(r"(group|user):[\w.@+ -]{1,150}\Z")


def _approval(c: Collector, raw: Mapping[str, Any], place: Place, _: RetryPolicy) -> dict[str, Any]:
    if "approvers" not in raw:
        return {}
    value = raw["approvers"]
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(v, str) and APPROVER.match(v) for v in value)
    ):
        c.add(
            'must be a non-empty list of "group:<name>" or "user:<username>", '
            'e.g. ["group:finance", "user:ada"]',
            node=place.scope.node,
            field=place.prefix + "approvers",
        )
        return {}
    return {"approvers": tuple(value)}


_TYPE_PARSERS: Mapping[str, Parser] = {
    "function": _function,
    "http": _http,
    "delay": parse_delay,
    "approval": _approval,
    "workflow": _workflow,
    "map": _map,
}
