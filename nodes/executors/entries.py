"""The worker's entry point of each node kind that has an executor: named by dotted path
in its kind (workflows/kinds/), imported only on the worker, and called as
`entry(node, payload, ctx) -> output` by nodes.tasks.execute."""

from __future__ import annotations

from typing import Any

from nodes.context import NodeContext
from workflows.conf import engine_settings
from workflows.dsl import Node
from workflows.kinds.base import spec_of
from workflows.kinds.function import FunctionSpec
from workflows.kinds.http import HttpSpec


def function(node: Node, payload: Any, ctx: NodeContext) -> Any:
    from nodes.executors.function import run_function

    return run_function(spec_of(node, FunctionSpec).function or "", payload, ctx)


def http(node: Node, payload: Any, ctx: NodeContext) -> Any:
    from nodes.executors.http import run_http

    return run_http(
        payload,
        ctx,
        success_status=spec_of(node, HttpSpec).success_status,
        allowed_hosts=engine_settings.HTTP_ALLOWED_HOSTS,
        timeout=node.timeout_seconds,
    )
