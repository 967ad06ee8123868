"""`map` nodes: one item task `<id>[<i>]` per item, at most max_parallel at once.

The map node itself runs while its items do; it succeeds with the list of their outputs
in item order, or fails once an item has failed for good (items not yet started are
skipped, items running finish first, as with strict failure).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from executions.engine.events import Decision, EventType
from executions.engine.nodes import start_node
from executions.engine.rules import failed_for_good, is_settled
from executions.engine.state import ExecutionState
from executions.engine.statuses import TASK_ACTIVE, TaskStatus
from workflows.dsl import Definition, Node
from workflows.dsl.model import COMPENSATION_SUFFIX


def item_id(map_id: str, index: int) -> str:
    return f"{map_id}[{index}]"


def item_ids(state: ExecutionState, node: Node) -> list[str]:
    items = (state.node(node.id).input or {}).get("items") or []
    return [item_id(node.id, i) for i in range(len(items))]


def all_nodes(definition: Definition, state: ExecutionState) -> Iterator[Node]:
    """The definition's nodes, the item tasks of every started map node, and every started
    compensation task."""
    for node in definition.nodes:
        yield node
        if node.type == "map" and state.node(node.id).status != TaskStatus.PENDING:
            for child in item_ids(state, node):
                yield definition.node_for(child)
        if node.compensation is not None and f"{node.id}{COMPENSATION_SUFFIX}" in state.nodes:
            yield definition.node_for(f"{node.id}{COMPENSATION_SUFFIX}")


def progress(
    definition: Definition, state: ExecutionState, context: dict[str, Any], now: datetime | None
) -> Iterator[Decision]:
    for node in definition.nodes:
        if node.type == "map" and state.node(node.id).status == TaskStatus.RUNNING:
            yield from _progress_one(definition, state, node, context, now)


def _progress_one(
    definition: Definition,
    state: ExecutionState,
    node: Node,
    context: dict[str, Any],
    now: datetime | None,
) -> Iterator[Decision]:
    items = state.node(node.id).input["items"]
    children = [(cid, definition.node_for(cid)) for cid in item_ids(state, node)]
    failed = [cid for cid, child in children if failed_for_good(child, state.node(cid))]
    active = sum(state.node(cid).status in TASK_ACTIVE for cid, _ in children)
    room = (node.max_parallel or len(children) or 1) - active
    for index, (cid, child) in enumerate(children):
        if state.node(cid).status != TaskStatus.PENDING:
            continue
        if failed:
            yield Decision(EventType.TASK_SKIPPED, cid, None, {"reason": "another item failed"})
        elif room > 0:
            room -= 1
            scope = {**context, "item": items[index], "index": index}
            yield from start_node(child, state.node(cid).attempt + 1, scope, now)
    if any(not is_settled(child, state.node(cid)) for cid, child in children):
        return
    attempt = state.node(node.id).attempt
    if failed:
        error = {
            "type": "MapItemFailed",
            "retryable": False,
            "items": failed,
            "message": f"item {failed[0]} failed",
            "cause": state.node(failed[0]).error,
        }
        yield Decision(EventType.TASK_FAILED, node.id, attempt, {"error": error})
    else:
        output = [state.node(cid).output for cid, _ in children]
        yield Decision(EventType.TASK_COMPLETED, node.id, attempt, {"output": output})
