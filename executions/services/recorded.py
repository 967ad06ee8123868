"""What a worker may write into the log: the one gate every recorded result passes.

Applied by executions/services/attempts.py to each output and error before its event is
appended, whoever produced it (a function, an HTTP response, a child's output, the
sweeper's timeout):

1. Secrets: every configured secret value, in any string or key, becomes `***`
   (nodes/secrets.py: raw, %-encoded and JSON-escaped forms).
2. NaN and infinities are not JSON (PostgreSQL's jsonb refuses them, and the hash chain
   has no canonical form for them). An output holding one fails the node, not retried,
   with `InvalidOutput` naming where it is; an error holding one has it replaced by
   null and a `note` saying so (an error must always be recordable).
3. Size: the compact JSON of an output past WORKFLOW_MAX_RECORDED_BYTES fails the node,
   not retried, with `OutputTooLarge` (size and setting in the message); an error past it
   keeps its type and retryability, its message cut to MESSAGE_CHARS, its other details
   dropped, and `"truncated": true`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from executions.engine.events import EventType
from nodes.secrets import redact
from workflows.conf import engine_settings

#: Characters of an oversized error's message that are kept.
MESSAGE_CHARS = 2000


def _max_bytes() -> int:
    return engine_settings.MAX_RECORDED_BYTES


def non_finite_path(value: Any, path: str = "") -> str | None:
    """Where the first NaN or infinity in a JSON value is (e.g. `output.rows[3].x`)."""
    if isinstance(value, float) and not math.isfinite(value):
        return path or "(the value itself)"
    if isinstance(value, Mapping):
        for key, item in value.items():
            found = non_finite_path(item, f"{path}.{key}" if path else str(key))
            if found:
                return found
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = non_finite_path(item, f"{path}[{index}]")
            if found:
                return found
    return None


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def _output_error(output: Any) -> dict[str, Any] | None:
    """Why an output cannot be recorded as it is, as the node's error; None if it can."""
    where = non_finite_path(output, "output")
    if where:
        message = f"{where} is NaN or infinite, which JSON cannot hold: return null or a string"
        return {"type": "InvalidOutput", "message": message, "retryable": False}
    size, limit = _size(output), _max_bytes()
    if size > limit:
        message = (
            f"the output is {size} bytes of JSON, over WORKFLOW_MAX_RECORDED_BYTES ({limit}): "
            "return less (e.g. a reference to where the data is), or raise the setting"
        )
        return {"type": "OutputTooLarge", "message": message, "retryable": False}
    return None


def _error(error: Mapping[str, Any]) -> dict[str, Any]:
    error = dict(error)
    if non_finite_path(error):
        error = {**_finite(error), "note": "NaN or infinite numbers were recorded as null"}
    if _size(error) > _max_bytes():
        message = str(error.get("message", ""))
        error = {
            "type": error.get("type", "NodeError"),
            "message": message[:MESSAGE_CHARS] + ("…" if len(message) > MESSAGE_CHARS else ""),
            "retryable": error.get("retryable", True),
            "truncated": True,
        }
    return error


def recordable(event_type: EventType, data: dict[str, Any]) -> tuple[EventType, dict[str, Any]]:
    """The result event to append for what a worker reported: secrets masked, and an
    output that cannot be recorded turned into the node's failure (see the docstring)."""
    data = redact(data)
    if event_type == EventType.TASK_COMPLETED:
        problem = _output_error(data.get("output"))
        if problem is None:
            return event_type, data
        return EventType.TASK_FAILED, {"error": problem}
    if "error" in data and isinstance(data["error"], Mapping):
        return event_type, {**data, "error": _error(data["error"])}
    return event_type, data
