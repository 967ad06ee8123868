"""The JSON Schema of a definition (CONTRACT §2), for the OpenAPI document.

It says what a JSON Schema can: the fields of a definition and of each node, their types
and ranges, and that no other field is accepted. The DSL parser (workflows/dsl) is the
authority and checks what a schema cannot: that depends_on names existing nodes, that
the graph is acyclic, which fields each node type requires, that templates parse, that
functions are registered and referenced workflows exist. Its 400 names node and field.
"""

from __future__ import annotations

import copy
from typing import Any

from workflows.dsl.bodies import COMMON_FIELDS, GRAPH_FIELDS, TYPE_FIELDS
from workflows.dsl.limits import limits
from workflows.dsl.model import NODE_TYPES, TRIGGER_RULES
from workflows.dsl.parser import TOP_FIELDS
from workflows.kinds import all_kinds

NODE_ID = {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"}
TEMPLATE = {"type": "string", "description": "A JMESPath expression over the context."}
ANY_JSON: dict[str, Any] = {"description": "Any JSON; strings may hold {{ templates }}."}
SECONDS = {"type": "number", "exclusiveMinimum": True, "minimum": 0}

RETRY_POLICY = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "max_attempts": {"type": "integer", "minimum": 1},
        "initial_interval_seconds": SECONDS,
        "backoff_coefficient": {"type": "number", "minimum": 1},
        "max_interval_seconds": SECONDS,
        "jitter": {"type": "boolean"},
        "non_retryable_errors": {"type": "array", "items": {"type": "string"}},
    },
}

#: Fields every node body has, and those of each type (only its type's are accepted).
#: Built when the module is first imported: a kind registered later is documented
#: as any JSON (see _in_step) until the process restarts.
BODY_FIELDS: dict[str, Any] = {
    "type": {"type": "string", "enum": list(NODE_TYPES)},
    "input": ANY_JSON,
    "retry_policy": {"$ref": "#/components/schemas/RetryPolicy"},
    "timeout_seconds": {**SECONDS, "description": "Per attempt, start to close."},
    "heartbeat_timeout_seconds": {**SECONDS, "description": "The lease of an attempt."},
    "pool": {
        "type": "string",
        "pattern": "^[a-z0-9][a-z0-9_-]{0,99}$",
        "description": "A pool (POST /pools): the node runs only while the pool has a free slot.",
    },
    # Each kind's own fields, as its kind documents them (workflows/kinds/).
    **{name: schema for kind in all_kinds() for name, schema in kind.schema.items()},
}


def _in_step(properties: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """Exactly the parser's fields: one it accepts that this module has not described yet
    is documented as any JSON rather than refused by the schema."""
    return {name: properties.get(name, ANY_JSON) for name in fields}


_BODY_NAMES = (*COMMON_FIELDS, *(f for fields in TYPE_FIELDS.values() for f in fields))
BODY_FIELDS = _in_step(BODY_FIELDS, _BODY_NAMES)

NODE_BODY = {
    "type": "object",
    "description": "A node without id/depends_on: a compensation, or a map's per-item node.",
    "additionalProperties": False,
    "required": ["type"],
    "properties": BODY_FIELDS,
}

NODE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["id", "type"],
    "properties": _in_step(
        {
            "id": NODE_ID,
            "depends_on": {"type": "array", "items": NODE_ID, "uniqueItems": True},
            "when": {**TEMPLATE, "description": "Falsy: the node is skipped."},
            "trigger_rule": {"type": "string", "enum": list(TRIGGER_RULES)},
            "compensation": {"$ref": "#/components/schemas/NodeBody"},
            **BODY_FIELDS,
        },
        (*GRAPH_FIELDS, *_BODY_NAMES),
    ),
}

DEFINITION = {
    "type": "object",
    "additionalProperties": False,
    "required": ["nodes"],
    "properties": _in_step(
        {
            "nodes": {
                "type": "array",
                "minItems": 1,
                "items": {"$ref": "#/components/schemas/Node"},
            },
            "retry_policy": {"$ref": "#/components/schemas/RetryPolicy"},
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
            "secrets": {
                "type": "array",
                "description": "The only secrets this workflow may use as {{ secrets.NAME }}.",
                "items": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
            },
        },
        TOP_FIELDS,
    ),
}

#: Components the definition's schema refers to, registered by the OpenAPI hook.
COMPONENTS = {
    "Definition": DEFINITION,
    "RetryPolicy": RETRY_POLICY,
    "NodeBody": NODE_BODY,
    "Node": NODE,
}


def components() -> dict[str, Any]:
    """COMPONENTS with the bounds in force (workflows.dsl.limits, from the WORKFLOW_...
    settings) and the registered functions, as of when the schema is generated. A version
    stored under looser settings may exceed a bound that was lowered since."""
    from nodes.registry import function_names

    bound = limits()
    out: dict[str, Any] = copy.deepcopy(
        COMPONENTS
    )  # one deepcopy: Node and NodeBody still share fields
    policy = out["RetryPolicy"]["properties"]
    policy["max_attempts"]["maximum"] = bound.max_attempts
    policy["initial_interval_seconds"] = {
        "type": "number",
        "minimum": bound.min_retry_interval_seconds,
    }
    body = out["NodeBody"]["properties"]
    body["timeout_seconds"]["maximum"] = bound.max_timeout_seconds
    body["heartbeat_timeout_seconds"]["maximum"] = bound.max_heartbeat_timeout_seconds
    for kind in all_kinds():
        kind.bound_schema(body, bound)
    if function_names():
        body["function"]["enum"] = sorted(function_names())
    out["Node"]["properties"]["when"]["maxLength"] = bound.max_expression_length
    out["Definition"]["properties"]["nodes"]["maxItems"] = bound.max_nodes
    return out
