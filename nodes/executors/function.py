"""The ``function`` node type: call a registered workflow function."""

from __future__ import annotations

import json
import traceback
from typing import Any

from nodes.context import NodeContext
from nodes.errors import NodeCancelled, NodeError
from nodes.registry import get_function, is_transactional
from workflows.dsl import Node
from workflows.kinds.base import spec_of
from workflows.kinds.function import FunctionSpec

TRACEBACK_LINES = 20


def transactional(node: Node) -> bool:
    """Whether the node calls a function registered with transactional=True."""
    if node.type != "function":
        return False
    return is_transactional(spec_of(node, FunctionSpec).function or "")


def run_function(name: str, input: Any, ctx: NodeContext) -> Any:
    """Call the function registered as ``name`` with ``(input, ctx)``.

    Returns its output normalized through JSON (tuples become lists, keys become
    strings), so what is recorded is exactly what later nodes will read.
    Raises NodeError (unknown function, the function's own errors, any other exception,
    non-JSON output) or NodeCancelled.
    """
    try:
        fn = get_function(name)
    except KeyError:
        raise NodeError(
            f"unknown workflow function: {name!r}", type="UnknownFunction", retryable=False
        ) from None

    try:
        output = fn(input, ctx)
    except (NodeError, NodeCancelled):
        raise
    except Exception as exc:
        lines = "".join(traceback.format_exception(exc)).splitlines()
        raise NodeError(
            str(exc) or type(exc).__name__,
            type=type(exc).__name__,
            retryable=True,
            details={"traceback": "\n".join(lines[-TRACEBACK_LINES:])},
        ) from exc

    try:
        return json.loads(json.dumps(output, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise NodeError(
            f"output of {name!r} is not JSON-serializable: {exc}",
            type="OutputNotJSON",
            retryable=False,
        ) from exc
