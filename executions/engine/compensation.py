"""Compensations: when an execution fails for good, the succeeded nodes that declare a
`compensation` are undone one at a time, latest completion first (a saga), before the
execution ends failed. A compensation runs as the task `<node id>.compensation`."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from executions.engine.events import Decision, EventType
from executions.engine.nodes import start_node
from executions.engine.payloads import CompensationScheduled, decided
from executions.engine.rules import is_settled
from executions.engine.state import ExecutionState
from executions.engine.statuses import TaskStatus
from workflows.dsl import Definition, Node
from workflows.dsl.model import COMPENSATION_SUFFIX


def task_id(node_id: str) -> str:
    return f"{node_id}{COMPENSATION_SUFFIX}"


def is_task(node_id: str) -> bool:
    return node_id.endswith(COMPENSATION_SUFFIX)


def undone(definition: Definition, state: ExecutionState) -> list[str]:
    """Nodes whose compensation has started: an operator's retry runs them again rather
    than count their undone results as succeeded."""
    return [
        n.id
        for n in definition.nodes
        if n.compensation is not None
        and state.nodes.get(task_id(n.id)) is not None
        and state.nodes[task_id(n.id)].status != TaskStatus.PENDING
    ]


def to_undo(definition: Definition, state: ExecutionState) -> list[str]:
    """Succeeded nodes with a compensation, latest completion first."""
    done = [
        n.id
        for n in definition.nodes
        if n.compensation is not None and state.peek(n.id).status == TaskStatus.SUCCEEDED
    ]
    return sorted(done, key=lambda node_id: state.peek(node_id).completed_seq or 0, reverse=True)


def tasks(definition: Definition, state: ExecutionState) -> Iterator[Node]:
    """Compensation tasks that have started, for retries, wake-ups and cancellation."""
    for node in definition.nodes:
        if node.compensation is not None and task_id(node.id) in state.nodes:
            yield definition.node_for(task_id(node.id))


def next_step(
    definition: Definition, state: ExecutionState, context: dict[str, Any], now: datetime | None
) -> tuple[list[Decision], bool]:
    """(decisions to take now, whether every compensation has settled)."""
    for node_id in to_undo(definition, state):
        task = definition.node_for(task_id(node_id))
        current = state.nodes.get(task.id)
        if current is None or current.status == TaskStatus.PENDING:
            undo = CompensationScheduled(task=task.id)
            scheduled = decided(EventType.COMPENSATION_SCHEDULED, undo, node_id)
            attempt = (current.attempt if current else 0) + 1
            return [scheduled, *start_node(task, attempt, context, now)], False
        if not is_settled(task, current):
            return [], False  # one at a time: the next waits for this one
    return [], True


def summary(definition: Definition, state: ExecutionState) -> dict[str, str]:
    return {node_id: state.peek(task_id(node_id)).status for node_id in to_undo(definition, state)}
