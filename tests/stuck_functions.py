"""A workflow function that never cooperates, for the hard-limit test: it blocks without
heartbeating or checking for cancellation, like a C call or a socket without a timeout.
Imported by the test process and, through WORKFLOW_FUNCTION_MODULES, by its worker."""

from __future__ import annotations

import time
from typing import Any

from nodes.registry import workflow_function


@workflow_function("test.stuck")
def stuck(input: Any, ctx: Any) -> None:
    time.sleep(float((input or {}).get("seconds", 600)))


@workflow_function("test.stalls")
def stalls(input: Any, ctx: Any) -> None:
    """Makes progress (heartbeats) for a while, then hangs without another heartbeat."""
    for _ in range(int((input or {}).get("beats", 5))):
        ctx.heartbeat()
        time.sleep(0.3)
    time.sleep(float((input or {}).get("seconds", 600)))


@workflow_function("test.progresses")
def progresses(input: Any, ctx: Any) -> str:
    """Heartbeats every 0.3 s for longer than its heartbeat timeout: never stalled."""
    for _ in range(int((input or {}).get("beats", 10))):
        ctx.heartbeat()
        time.sleep(0.3)
    return "done"
