"""The host app's own workflow functions, found at start-up by name alone."""

from __future__ import annotations

from typing import Any

from nodes import NodeContext, workflow_function


@workflow_function("shop.total")
def total(input: Any, ctx: NodeContext) -> dict[str, Any]:
    """The sum of the order's prices."""
    return {"total": sum(item["price"] for item in input["items"])}


@workflow_function("shop.remind")
def remind(input: Any, ctx: NodeContext) -> dict[str, Any]:
    """Would e-mail the customer about their order; the host's tests stand in for it."""
    return {"sent": True, "total": input["total"]}
