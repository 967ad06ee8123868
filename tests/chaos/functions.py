"""Workflow functions for the chaos DAG, imported by the chaos workers only (they get
`tests.chaos.functions` appended to WORKFLOW_FUNCTION_MODULES in their environment)."""

from __future__ import annotations

import os
from typing import Any

from nodes.context import NodeContext
from nodes.registry import workflow_function
from tests.runlog import append_line

#: Every run of a node body appends one line here, so the checks can count real runs.
RUN_LOG_ENV = "WORKFLOW_CHAOS_RUN_LOG"


def record_run(execution_id: str, node_id: str, attempt: int) -> None:
    path = os.environ.get(RUN_LOG_ENV)
    if not path:
        return
    append_line(path, f"{execution_id} {node_id} {attempt} {os.getpid()}")


@workflow_function("chaos.work")
def work(input: Any, ctx: NodeContext) -> dict[str, Any]:
    """``{"n": ..., "seconds": s}``: note the run, sleep s seconds heartbeating, output
    ``{"node", "n"}`` (the same whatever the attempt, so outputs can be checked exactly)."""
    record_run(ctx.execution_id, ctx.node_id, ctx.attempt)
    ctx.sleep(float(input.get("seconds", 0)))
    return {"node": ctx.node_id, "n": input.get("n")}
