"""Functions in a module a project lists in WORKFLOW_FUNCTION_MODULES (no app of its own)."""

from __future__ import annotations

from typing import Any

from nodes import NodeContext, workflow_function


@workflow_function("listed.double")
def double(input: Any, ctx: NodeContext) -> Any:
    return input * 2
