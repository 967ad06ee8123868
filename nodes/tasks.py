"""The executors' entry point: run one claimed attempt with its node kind's executor.

Called by the worker runtime (executions/worker/runtime.py), which owns the lease, the
watchdog and the recording of the result; nothing in nodes/ imports executions.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from nodes.context import Claimed, NodeContext
from nodes.errors import NodeError
from nodes.secrets import with_secrets


def execute(claimed: Claimed, ctx: NodeContext) -> Any:
    node = claimed.node
    payload = with_secrets(node, claimed.input, claimed.context)
    if node.type == "function":
        from nodes.executors.function import run_function

        return run_function(node.function or "", payload, ctx)
    if node.type == "http":
        from nodes.executors.http import run_http

        return run_http(
            payload,
            ctx,
            success_status=node.success_status,
            allowed_hosts=settings.WORKFLOW_HTTP_ALLOWED_HOSTS,
            timeout=node.timeout_seconds,
        )
    raise NodeError(
        f"node type '{node.type}' does not run on a worker", type="BadNodeType", retryable=False
    )
