"""`map` nodes: one item task `<id>[<i>]` per item, at most max_parallel at once.

The map node itself runs while its items do; it succeeds with the list of their outputs
in item order, or fails once an item has failed for good (items not yet started are
skipped, items running finish first, as with strict failure). A map without max_parallel
runs WORKFLOW_MAP_DEFAULT_MAX_PARALLEL items at once (limits.py), never all of them.

decide looks at every item of a running map on every call, so this module touches item
states (dict lookups) for all of them but builds a per-item Node only for the items that
can still change: building one costs microseconds, times thousands of items, per call.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from functools import lru_cache
from typing import Any

from executions.engine.errors import ErrorRecord
from executions.engine.events import Decision, EventType
from executions.engine.nodes import start_node
from executions.engine.payloads import Reason, TaskCompleted, TaskFailed, decided
from executions.engine.rules import failed_for_good
from executions.engine.state import ExecutionState, NodeState
from executions.engine.statuses import TASK_ACTIVE, TaskStatus
from workflows.dsl import Definition, Node
from workflows.dsl.limits import limits
from workflows.dsl.model import COMPENSATION_SUFFIX
from workflows.kinds.base import spec_of
from workflows.kinds.map import MapSpec

#: An item in one of these will not change again unless an operator retries it, and
#: decide has nothing to do for it outside this module.
_DONE = frozenset({TaskStatus.SUCCEEDED, TaskStatus.SKIPPED, TaskStatus.CANCELLED})


def fans_out(node: Node) -> bool:
    """A map node: its kind's spec names a per-item body. (decide asks this of every
    node on every call: an isinstance, not a registry lookup.)"""
    return isinstance(node.spec, MapSpec)


def has_maps(definition: Definition) -> bool:
    return bool(definition.map_ids)


def item_id(map_id: str, index: int) -> str:
    return f"{map_id}[{index}]"


def item_ids(state: ExecutionState, node: Node) -> list[str]:
    items = (state.peek(node.id).input or {}).get("items") or []
    return list(_ids(node.id, len(items)))


@lru_cache(maxsize=16)
def _ids(map_id: str, count: int) -> tuple[str, ...]:
    """Built once per running map, not on every decide (a few MB for the 16 largest)."""
    return tuple(item_id(map_id, i) for i in range(count))


def _status(current: NodeState | None) -> str:
    """A node no event has mentioned yet is pending (like ExecutionState.node, without
    creating its state: decide reads every item of a running map on every call)."""
    return TaskStatus.PENDING if current is None else current.status


def all_nodes(definition: Definition, state: ExecutionState) -> Iterator[Node]:
    """The definition's nodes, the item tasks of every started map node that decide may
    have to attend to, and every started compensation task.

    Left out: succeeded, skipped and cancelled items (neither retries, wake-ups nor a
    cancel concern them), and pending items unless a cancel was requested (only a
    cancel concerns them; `_progress_one` starts them)."""
    skip = _DONE if state.cancel_requested else _DONE | {TaskStatus.PENDING}
    nodes, map_ids = state.nodes, definition.map_ids
    for node in definition.nodes:
        yield node
        if node.id in map_ids and state.peek(node.id).status != TaskStatus.PENDING:
            for child in item_ids(state, node):
                if _status(nodes.get(child)) not in skip:
                    yield definition.node_for(child)
        if node.compensation is not None and f"{node.id}{COMPENSATION_SUFFIX}" in state.nodes:
            yield definition.node_for(f"{node.id}{COMPENSATION_SUFFIX}")


def max_parallel(node: Node) -> int:
    return spec_of(node, MapSpec).max_parallel or limits().map_default_max_parallel


def progress(
    definition: Definition, state: ExecutionState, context: dict[str, Any], now: datetime | None
) -> Iterator[Decision]:
    for node in definition.nodes:
        if node.id in definition.map_ids and state.peek(node.id).status == TaskStatus.RUNNING:
            yield from _progress_one(definition, state, node, context, now)


def _progress_one(
    definition: Definition,
    state: ExecutionState,
    node: Node,
    context: dict[str, Any],
    now: datetime | None,
) -> Iterator[Decision]:
    items = state.peek(node.id).input["items"]
    ids = item_ids(state, node)
    # Every item shares the map's body, so one Node answers the policy questions for all.
    body = definition.node_for(ids[0]) if ids else node
    nodes = state.nodes
    states = [nodes.get(cid) for cid in ids]  # None: pending, never mentioned
    failed = [
        cid
        for cid, current in zip(ids, states, strict=True)
        if current is not None and failed_for_good(body, current)
    ]
    active = sum(_status(current) in TASK_ACTIVE for current in states)
    room = max_parallel(node) - active
    done = set(failed)
    settled = True
    for index, (cid, current) in enumerate(zip(ids, states, strict=True)):
        status = _status(current)
        if status != TaskStatus.PENDING:
            settled = settled and (status in _DONE or cid in done)
            continue
        settled = False  # skipped or started now: settled at the next step at the earliest
        if failed:
            yield decided(EventType.TASK_SKIPPED, Reason(reason="another item failed"), cid)
        elif room > 0:
            room -= 1
            scope = {**context, "item": items[index], "index": index}
            attempt = current.attempt if current is not None else 0
            yield from start_node(definition.node_for(cid), attempt + 1, scope, now)
    if not settled:
        return
    attempt = state.peek(node.id).attempt
    if failed:
        error = ErrorRecord(
            "MapItemFailed",
            f"item {failed[0]} failed",
            retryable=False,
            details={"items": failed, "cause": state.peek(failed[0]).error},
        )
        yield decided(EventType.TASK_FAILED, TaskFailed(error=error), node.id, attempt)
    else:
        output = TaskCompleted(output=[state.peek(cid).output for cid in ids])
        yield decided(EventType.TASK_COMPLETED, output, node.id, attempt)
