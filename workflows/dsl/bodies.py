"""Parsing of node bodies: the fields that say what a node does, per type.

The same code parses a graph node, a `compensation` and a map's per-item `node`; a
`Place` says which of these it is, and so which fields and references are allowed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from workflows.dsl.checks import Collector, describe, quote
from workflows.dsl.model import NodeBody
from workflows.dsl.place import Place
from workflows.dsl.policy import parse_policy
from workflows.dsl.rate_limit import parse_rate_limit
from workflows.dsl.references import check_templates
from workflows.kinds import FIELDS, NAMES, WORKER_NAMES, get_kind

COMMON_FIELDS = (
    "type",
    "input",
    "retry_policy",
    "timeout_seconds",
    "heartbeat_timeout_seconds",
    "pool",
    "rate_limit",
)
GRAPH_FIELDS = ("id", "depends_on", "when", "trigger_rule", "compensation")
#: Each type's own fields, from the kinds' registry (workflows/kinds/).
TYPE_FIELDS: Mapping[str, tuple[str, ...]] = FIELDS
#: Each timeout field and the bound of limits.py it is held to.
_TIMEOUT_BOUNDS = {
    "timeout_seconds": "max_timeout_seconds",
    "heartbeat_timeout_seconds": "max_heartbeat_timeout_seconds",
}


def what(place: Place, kind: str | None) -> str:
    """How problems name a body of `kind` at `place`."""
    if place.label:
        return place.label
    found = get_kind(kind)
    return f"{found.article} {found.name} node" if found else "a node"


def build_body(c: Collector, raw: object, place: Place) -> NodeBody | None:
    """A compensation or map body, as a NodeBody."""
    field = place.prefix.rstrip(".")
    body = c.mapping(raw, node=place.scope.node, field=field, what='an object like {"type": ...}')
    return None if body is None else NodeBody(**parse_body(c, body, place))


def parse_body(c: Collector, raw: Mapping[str, Any], place: Place) -> dict[str, Any]:
    """Keyword arguments for NodeBody (or Node, with the graph fields added); the kind's
    own fields go to `spec`, as its kind parses them."""
    node, p = place.scope.node, place.prefix
    kind = raw.get("type")
    found = get_kind(kind)
    if "type" not in raw:
        c.add(f"is required: one of {', '.join(NAMES)}", node=node, field=p + "type")
    elif found is None:
        shown = f"unknown type {quote(kind)}" if isinstance(kind, str) else f"got {describe(kind)}"
        c.add(
            f"must be one of {', '.join(NAMES)} ({shown})",
            node=node,
            field=p + "type",
        )
    elif found.fans_out and place.no_map:
        c.add(place.no_map, node=node, field=p + "type")
        found = None
    known = found.name if found else None
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
    if "pool" in raw:
        kwargs["pool"] = _pool(c, raw["pool"], known, place)
    if "rate_limit" in raw and _runs_on_a_worker(c, known, place, "rate_limit"):
        kwargs["rate_limit"] = parse_rate_limit(c, raw["rate_limit"], place.scope, p + "rate_limit")
    if found is not None:
        for requirement in found.requires:
            requirement.check(c, raw, node=node, prefix=p)
        kwargs["spec"] = found.parse(c, raw, place, kwargs["retry_policy"])
    return kwargs


POOL_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,99}\Z")


def _pool(c: Collector, raw: object, kind: str | None, place: Place) -> str | None:
    node, field = place.scope.node, place.prefix + "pool"
    name = c.string(raw, node=node, field=field, what="a pool's name (POST /pools)")
    if name is None:
        return None
    if not POOL_NAME.match(name):
        c.add(
            f"{quote(name)} is not a pool name (a slug: a-z, 0-9, '-', '_')", node=node, field=field
        )
        return None
    found = get_kind(kind)
    if found is not None and kind not in WORKER_NAMES:
        runs = ", ".join(sorted(WORKER_NAMES))
        c.add(
            f"a {kind} node takes no worker slot: pools apply to nodes a worker runs ({runs})"
            + ("; put the pool in the map's per-item node" if found.fans_out else ""),
            node=node,
            field=field,
        )
        return None
    return name


def _runs_on_a_worker(c: Collector, kind: str | None, place: Place, name: str) -> bool:
    """Whether a node of `kind` starts attempts on a worker, which a limit can hold back;
    a problem naming the field when it does not."""
    found = get_kind(kind)
    if found is None or kind in WORKER_NAMES:
        return True
    runs = ", ".join(sorted(WORKER_NAMES))
    c.add(
        f"a {kind} node starts no attempt on a worker: {name} applies to {runs} nodes"
        + ("; put it in the map's per-item node" if found.fans_out else ""),
        node=place.scope.node,
        field=place.prefix + name,
    )
    return False


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
            message = f"'{key}' belongs to {'/'.join(owners)} nodes, not to {what(place, kind)}"
        else:
            shown = quote(key) if isinstance(key, str) else repr(key)
            listing = ", ".join(sorted(allowed))
            message = f"unknown field {shown} for {what(place, kind)}; allowed: {listing}"
        c.add(message, node=place.scope.node, field=field)
