"""The executors' entry point: run one claimed attempt with its node kind's executor.

Called by the worker runtime (executions/worker/runtime.py), which owns the lease, the
watchdog and the recording of the result; nothing in nodes/ imports executions.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

from nodes.context import Claimed, NodeContext
from nodes.errors import NodeError
from nodes.secrets import with_secrets
from workflows.kinds import get_kind


def execute(claimed: Claimed, ctx: NodeContext) -> Any:
    """Run the attempt with its kind's executor (workflows/kinds/), imported here, on the
    worker, so that the kinds and the engine core stay free of worker code."""
    node = claimed.node
    kind = get_kind(node.type)
    if kind is None or kind.executor is None:
        raise NodeError(
            f"node type '{node.type}' does not run on a worker", type="BadNodeType", retryable=False
        )
    payload = with_secrets(node, claimed.input, claimed.context)
    module, _, name = kind.executor.partition(":")
    entry: Callable[[Any, Any, NodeContext], Any] = getattr(import_module(module), name)
    return entry(node, payload, ctx)
