"""How each node type starts: the first decision for a node whose trigger rule holds."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from executions.engine.events import Decision, EventType
from executions.engine.timeutil import plus_seconds
from workflows.dsl import Node
from workflows.dsl.delays import until_problem
from workflows.dsl.limits import limits, over
from workflows.dsl.templates import TemplateError, check_size, render, search

#: Types whose attempts run on a worker; the others are handled by the orchestrator.
#: (A workflow node's worker starts the child execution; its result comes when the child ends.)
WORKER_TYPES = frozenset({"function", "http", "workflow"})
SUPPORTED_TYPES = frozenset({"function", "http", "delay", "approval", "workflow", "map"})


def start_node(
    node: Node, attempt: int, context: dict[str, Any], now: datetime | None
) -> Iterator[Decision]:
    try:
        if node.when is not None and not search(node.when, context):
            yield Decision(EventType.TASK_SKIPPED, node.id, None, {"reason": "when is false"})
            return
        if node.type not in SUPPORTED_TYPES:
            raise _Unsupported(node.type)
        if node.type == "delay":
            yield _start_timer(node, attempt, context, now)
            return
        if node.type == "map":
            yield _start_map(node, attempt, context)
            return
        payload = node.request if node.type == "http" else node.input
        data = {"input": render(payload, context), "type": node.type}
        yield Decision(EventType.TASK_SCHEDULED, node.id, attempt, data)
    except (TemplateError, _Unsupported, ValueError, TypeError) as exc:
        error_type = "TemplateError" if isinstance(exc, TemplateError) else type(exc).__name__
        error = {"type": error_type, "message": str(exc), "retryable": False}
        yield Decision(EventType.TASK_FAILED, node.id, attempt, {"error": error})


class _Unsupported(Exception):
    def __init__(self, node_type: str):
        super().__init__(f"node type '{node_type}' is not supported by this engine version yet")


class LimitExceeded(ValueError):
    """A node would go past a bound of limits.py; the message names the setting."""


def _start_timer(
    node: Node, attempt: int, context: dict[str, Any], now: datetime | None
) -> Decision:
    if node.until is not None:
        until = str(render(node.until, context))
        due = datetime.fromisoformat(until)
        if due.tzinfo is None:
            raise ValueError(f"until '{until}' has no timezone: add one, e.g. +00:00")
        problem = until_problem(due, now) if now is not None else None
        if problem:
            raise LimitExceeded(f"until {until[:60]!r}: {problem}")
        data = {"input": {"until": until, "due_at": due.isoformat()}}
    else:
        seconds = float(node.seconds or 0)
        if seconds > limits().max_delay_seconds:  # a version stored before the bound
            raise LimitExceeded(over("max_delay_seconds", what="seconds", got=seconds))
        due = plus_seconds(now, seconds)
        data = {"input": {"seconds": seconds, "due_at": due.isoformat()}}
    return Decision(EventType.TIMER_STARTED, node.id, attempt, data)


def _start_map(node: Node, attempt: int, context: dict[str, Any]) -> Decision:
    items = search(node.items or "", context)
    if not isinstance(items, list):
        raise TypeError(f"items '{node.items}' gave {type(items).__name__}, not a list")
    if len(items) > limits().map_max_items:
        raise LimitExceeded(over("map_max_items", what="the map", got=len(items)))
    check_size(items, what="the map's items")
    data = {"input": {"items": items}, "type": "map"}
    return Decision(EventType.TASK_SCHEDULED, node.id, attempt, data)
