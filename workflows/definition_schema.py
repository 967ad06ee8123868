"""The JSON Schema of a definition, for the OpenAPI document.

A node is one of the registered kinds, each its own component (`FunctionNode`,
`HttpNode`, ...; `FunctionNodeBody` ... for a compensation or a map's per-item node),
built from what the kind declares (workflows/kinds/): its fields' schemas, the fields it
requires (the same declaration the parser checks), whether it takes a pool. So the
schema refuses what the parser refuses field by field: a missing required field,
another kind's field, a pool on a kind no worker runs, a map inside a map.

The DSL parser (workflows/dsl) is the authority and checks what a schema cannot: that
depends_on names existing nodes, that the graph is acyclic, that templates parse and
read only upstream nodes, that referenced workflows exist, that a literal `until` is
within the delay bound from now. Its 400 names node and field.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from workflows.dsl.bodies import COMMON_FIELDS, GRAPH_FIELDS
from workflows.dsl.checks import MAX_SECONDS
from workflows.dsl.limits import Limits, limits
from workflows.dsl.model import TRIGGER_RULES
from workflows.dsl.parser import TOP_FIELDS
from workflows.kinds import all_kinds
from workflows.kinds.base import NodeKind
from workflows.kinds.fields import required_schema

NODE_ID = {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"}
TEMPLATE = {"type": "string", "description": "A JMESPath expression over the context."}
ANY_JSON: dict[str, Any] = {"description": "Any JSON; strings may hold {{ templates }}."}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _seconds(maximum: float, description: str | None = None) -> dict[str, Any]:
    """A duration the parser takes: a number > 0, at most `maximum` and ten years."""
    schema: dict[str, Any] = {"type": "number", "exclusiveMinimum": True, "minimum": 0}
    schema["maximum"] = min(maximum, MAX_SECONDS)
    return {**schema, "description": description} if description else schema


def _retry_policy(bound: Limits) -> dict[str, Any]:
    least = bound.min_retry_interval_seconds
    initial = {"type": "number", "minimum": least, "maximum": MAX_SECONDS}
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "max_attempts": {"type": "integer", "minimum": 1, "maximum": bound.max_attempts},
            # The parser takes > 0 and >= the setting: when the setting is 0, > 0 is left.
            "initial_interval_seconds": initial if least > 0 else _seconds(MAX_SECONDS),
            "backoff_coefficient": {"type": "number", "minimum": 1, "maximum": MAX_SECONDS},
            "max_interval_seconds": _seconds(MAX_SECONDS),
            "jitter": {"type": "boolean"},
            "non_retryable_errors": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
            },
            "on_exhausted": {
                "type": "string",
                "enum": ["fail", "park"],
                "description": "fail (default): the execution fails; park: the node waits, "
                "parked, for POST .../tasks/{node_id}/retry or /fail.",
            },
        },
    }


def _common(bound: Limits) -> dict[str, Any]:
    """The schemas of the fields every node body has (the parser's COMMON_FIELDS)."""
    return {
        "input": ANY_JSON,
        "retry_policy": _ref("RetryPolicy"),
        "timeout_seconds": _seconds(bound.max_timeout_seconds, "Per attempt, start to close."),
        "heartbeat_timeout_seconds": _seconds(
            bound.max_heartbeat_timeout_seconds, "The lease of an attempt."
        ),
        "pool": {
            "type": "string",
            "pattern": "^[a-z0-9][a-z0-9_-]{0,99}$",
            "description": "A pool (POST /pools): the node runs only while the pool has a "
            "free slot. Only on the kinds a worker runs.",
        },
        "rate_limit": {
            "type": "object",
            "additionalProperties": False,
            "required": ["per_second"],
            "properties": {
                "key": {**TEMPLATE, "description": "Rendered over the node's context."},
                "per_second": {
                    "type": "number",
                    "minimum": 0,
                    "exclusiveMinimum": True,
                    "maximum": 1_000_000,
                },
                "burst": {"type": "integer", "minimum": 1, "maximum": 2147483647},
            },
            "description": "At most per_second attempts start a second per rendered key, "
            "across executions (burst at once; default: per_second rounded up). Without a "
            "key, the workflow's node is its own bucket. Only on the kinds a worker runs.",
        },
    }


def _graph(bound: Limits) -> dict[str, Any]:
    """The schemas of the fields only a graph node has (the parser's GRAPH_FIELDS)."""
    return {
        "id": NODE_ID,
        "depends_on": {"type": "array", "items": NODE_ID, "uniqueItems": True},
        "when": {
            **TEMPLATE,
            "pattern": r"\S",
            "maxLength": bound.max_expression_length,
            "description": "Falsy: the node is skipped.",
        },
        "trigger_rule": {"type": "string", "enum": list(TRIGGER_RULES)},
        "compensation": _ref("NodeBody"),
    }


def component_name(kind: NodeKind, *, graph: bool) -> str:
    """`HttpNode` for a graph node of kind http, `HttpNodeBody` for its body."""
    camel = "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", kind.name))
    return f"{camel}Node" if graph else f"{camel}NodeBody"


#: The fields only a node a worker runs takes.
WORKER_ONLY = frozenset({"pool", "rate_limit"})


def kind_schema(
    kind: NodeKind, bound: Limits, *, graph: bool, functions: list[str]
) -> dict[str, Any]:
    """A node of this kind: exactly the fields the parser takes for it, each field it
    requires required. A field the kind does not describe is documented as any JSON
    rather than refused."""
    common = [f for f in COMMON_FIELDS if f not in WORKER_ONLY or kind.runs_on_worker]
    names = (*(GRAPH_FIELDS if graph else ()), *common, *kind.fields)
    known = {
        **(_graph(bound) if graph else {}),
        **_common(bound),
        **{name: dict(schema) for name, schema in kind.schema.items()},
        "type": {"type": "string", "enum": [kind.name]},
    }
    properties = {name: known.get(name, ANY_JSON) for name in names}
    kind.bound_schema(properties, bound)
    if "function" in kind.fields and functions:
        properties["function"] = {**properties["function"], "enum": functions}
    keywords = required_schema(kind.requires)
    required = ["id", "type"] if graph else ["type"]
    return {
        "type": "object",
        "additionalProperties": False,
        **keywords,
        "required": [*required, *keywords.get("required", [])],
        "properties": properties,
    }


def _one_of(kinds: list[NodeKind], *, graph: bool, description: str) -> dict[str, Any]:
    names = {kind.name: component_name(kind, graph=graph) for kind in kinds}
    return {
        "description": description,
        "oneOf": [_ref(name) for name in names.values()],
        "discriminator": {
            "propertyName": "type",
            "mapping": {kind: _ref(name)["$ref"] for kind, name in names.items()},
        },
    }


def _definition(bound: Limits) -> dict[str, Any]:
    properties = {
        "nodes": {
            "type": "array",
            "minItems": 1,
            "maxItems": bound.max_nodes,
            "items": _ref("Node"),
        },
        "retry_policy": _ref("RetryPolicy"),
        "output": ANY_JSON,
        "compensate_on_cancel": {
            "type": "boolean",
            "description": "A cancel runs the compensations of succeeded nodes first.",
        },
        "concurrency": {
            "type": "object",
            "additionalProperties": False,
            "required": ["key", "limit"],
            "description": "At most `limit` executions of this workflow per value of "
            "`key` (a template over the input, rendered at start) run at once; the "
            "others wait pending and start first-in first-out.",
            "properties": {
                "key": {"type": "string", "minLength": 1, "example": "{{ input.customer_id }}"},
                "limit": {"type": "integer", "minimum": 1},
            },
        },
        "retention_days": {
            "type": "integer",
            "minimum": 1,
            "description": "Days its ended executions are kept before the daily purge "
            "deletes them (leaving a tombstone); absent: WORKFLOW_RETENTION_DAYS.",
        },
        "timeout_seconds": _seconds(
            MAX_SECONDS,
            "An execution still running this long after it started ends failed "
            "(WorkflowTimeout): its running nodes are cancelled and compensations run. A "
            "sub-workflow gets at most what is left of its parent's.",
        ),
        "secrets": {
            "type": "array",
            "description": "The only secrets this workflow may use as {{ secrets.NAME }}.",
            "items": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
        },
    }
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["nodes"],
        "properties": {name: properties.get(name, ANY_JSON) for name in TOP_FIELDS},
    }


def components() -> dict[str, Any]:
    """The definition's components, with the bounds in force (workflows.dsl.limits, from
    the WORKFLOW_... settings), the kinds and the functions registered, as of when the
    schema is generated. A version stored under looser settings may exceed a bound that
    was lowered since."""
    from nodes.registry import function_names

    bound = limits()
    functions = sorted(function_names())
    kinds = list(all_kinds())
    # A compensation and a map's per-item node are never a map (the parser's no_map).
    bodies = [kind for kind in kinds if not kind.fans_out]
    out: dict[str, Any] = {
        "Definition": _definition(bound),
        "RetryPolicy": _retry_policy(bound),
        "Node": _one_of(kinds, graph=True, description="A node of the graph, by its type."),
        "NodeBody": _one_of(
            bodies,
            graph=False,
            description="A node without id/depends_on: a compensation, or a map's per-item "
            "node (never a map).",
        ),
    }
    for graph, listed in ((True, kinds), (False, bodies)):
        for kind in listed:
            schema = kind_schema(kind, bound, graph=graph, functions=functions)
            out[component_name(kind, graph=graph)] = schema
    # One copy, none shared with the kinds' declarations: later hooks may edit in place.
    return copy.deepcopy(out)
