"""Ending an execution the engine could not handle: the pure side of fault containment.

A boundary that serves many executions (sweeper item, worker task, timer, start) turns
an exception inside one of them into an `engine_error` fact. decide() then ends that
execution here, before anything else: it cancels the active nodes and fails the workflow
with the recorded error. Nothing here reads the definition or renders a template, so the
step that ends a broken execution cannot break the same way again.
"""

from __future__ import annotations

from typing import Any

from executions.engine.errors import ErrorRecord
from executions.engine.events import Decision, EventType
from executions.engine.payloads import (
    EngineErrorFact,
    Reason,
    WorkflowFailed,
    decided,
    to_json,
)
from executions.engine.state import ExecutionState
from executions.engine.statuses import TASK_ACTIVE

#: An exception message is kept up to this many characters in the event.
MESSAGE_LIMIT = 2000


def engine_error_data(exc: BaseException, where: str) -> dict[str, Any]:
    """The engine_error fact's data: what broke (type and message) and at which boundary."""
    text = f"{type(exc).__name__}: {exc}"
    if len(text) > MESSAGE_LIMIT:
        text = text[:MESSAGE_LIMIT] + "… (truncated)"
    # A NUL or a lone surrogate in the message would make the event itself unstorable.
    text = text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")
    error = ErrorRecord("EngineError", text, details={"where": where})
    return to_json(EngineErrorFact(error=error))


def engine_failure(state: ExecutionState) -> list[Decision]:
    """The decisions that end an execution with a recorded engine error, in node-id order
    (the order node states were folded in is not kept by a snapshot in jsonb)."""
    cancelled = [
        decided(
            EventType.TASK_CANCELLED,
            Reason(reason="engine error"),
            node_id,
            state.nodes[node_id].attempt or None,
        )
        for node_id in sorted(state.nodes)
        if state.nodes[node_id].status in TASK_ACTIVE
    ]
    error = ErrorRecord.from_json(state.engine_error) if state.engine_error else None
    failed = decided(EventType.WORKFLOW_FAILED, WorkflowFailed(error=error))
    return [*cancelled, failed]
