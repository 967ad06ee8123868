"""The functions that ship with the engine: ``std.echo``, ``std.noop``, ``std.sleep``,
``std.fail``."""

from __future__ import annotations

import math
from typing import Any

from nodes.context import NodeContext
from nodes.errors import NodeError
from nodes.registry import workflow_function
from workflows.dsl.limits import limits, over


def _invalid_input(message: str) -> NodeError:
    return NodeError(message, type="InvalidInput", retryable=False)


@workflow_function("std.echo")
def echo(input: Any, ctx: NodeContext) -> Any:
    """Output its input."""
    return input


@workflow_function("std.noop")
def noop(input: Any, ctx: NodeContext) -> None:
    """Do nothing; output null."""
    return None


@workflow_function("std.sleep")
def sleep(input: Any, ctx: NodeContext) -> Any:
    """``{"seconds": s}``: sleep s seconds, heartbeating, then output the input.

    Stops early with NodeCancelled when the attempt is cancelled.
    """
    if not isinstance(input, dict) or "seconds" not in input:
        raise _invalid_input('std.sleep needs {"seconds": <number>}')
    seconds = input["seconds"]
    valid = isinstance(seconds, int | float) and not isinstance(seconds, bool)
    if not valid or not math.isfinite(seconds) or seconds < 0:
        raise _invalid_input(f"std.sleep: seconds must be a number >= 0, not {seconds!r}")
    if seconds > limits().max_sleep_seconds:
        raise _invalid_input("std.sleep: " + over("max_sleep_seconds", what="seconds", got=seconds))
    ctx.sleep(float(seconds))
    return input


@workflow_function("std.fail")
def fail(input: Any, ctx: NodeContext) -> None:
    """``{"message": m, "retryable": bool = true, "type"?: str, "details"?: {}}``: raise."""
    data = input if isinstance(input, dict) else {}
    message = data.get("message", "std.fail")
    retryable = data.get("retryable", True)
    error_type = data.get("type") or "std.fail"
    details = data.get("details")
    if not isinstance(retryable, bool):
        raise _invalid_input(f"std.fail: retryable must be a boolean, not {retryable!r}")
    raise NodeError(
        str(message),
        type=str(error_type),
        retryable=retryable,
        details=details if isinstance(details, dict) else None,
    )
