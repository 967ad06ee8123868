"""`map` nodes: one item task `<id>[<i>]` per item, at most max_parallel at once.

The map node itself runs while its items do; it succeeds with the list of their outputs
in item order, or fails once an item has failed for good (items not yet started are
skipped, items running finish first, as with strict failure). A map without max_parallel
runs WORKFLOW_MAP_DEFAULT_MAX_PARALLEL items at once (limits.py), never all of them.

decide runs once per fact, so a map of N items is decided upon about 2N times: this
module looks only at the items that can still change (ExecutionState.maps, which fold
keeps: the live ones, at most max_parallel plus the failed) and at the next pending ones,
never at every item, so a call costs the same at 500 items as at 10,000. The one full
pass over the items is the map's own end (its output), and a cancel (every pending item
is cancelled) or an operator's retry that left gaps take the general way, which scans.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from executions.engine.errors import ErrorRecord
from executions.engine.events import Decision, EventType
from executions.engine.nodes import start_node
from executions.engine.payloads import Reason, TaskCompleted, TaskFailed, decided
from executions.engine.rules import failed_for_good
from executions.engine.state import ITEM_DONE, ExecutionState, MapItems, NodeState, item_of
from executions.engine.statuses import TASK_ACTIVE, TaskStatus
from workflows.dsl import Definition, Node
from workflows.dsl.limits import limits
from workflows.dsl.model import COMPENSATION_SUFFIX
from workflows.kinds.base import spec_of
from workflows.kinds.map import MapSpec

#: An item in one of these will not change again unless an operator retries it, and
#: decide has nothing to do for it outside this module.
_DONE = ITEM_DONE
_NONE_YET = MapItems()  # a map none of whose items an event has mentioned: never changed


def fans_out(node: Node) -> bool:
    """A map node: its kind's spec names a per-item body. (decide asks this of every
    node on every call: an isinstance, not a registry lookup.)"""
    return isinstance(node.spec, MapSpec)


def has_maps(definition: Definition) -> bool:
    return bool(definition.map_ids)


def item_id(map_id: str, index: int) -> str:
    return f"{map_id}[{index}]"


def item_scope(state: ExecutionState, node_id: str) -> dict[str, Any]:
    """What a map's item task `<map id>[<index>]` adds to its templates, `item` and
    `index`, as its start saw them (the items the map's input recorded); empty for any
    other node. For templates rendered after the start (a rate limit's key, at the claim)."""
    found = item_of(node_id)
    if found is None:
        return {}
    map_id, index = found
    items = (state.peek(map_id).input or {}).get("items") or []
    return {"item": items[index] if index < len(items) else None, "index": index}


def item_ids(state: ExecutionState, node: Node) -> tuple[str, ...]:
    items = (state.peek(node.id).input or {}).get("items") or []
    return _ids(node.id, len(items))


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
    cancel concern them), and unless a cancel was requested, pending items (only a
    cancel concerns them; `_progress_one` starts them) and scheduled and running ones
    (they wait for their worker: only a cancel concerns them too)."""
    map_ids = definition.map_ids
    for node in definition.nodes:
        yield node
        if node.id in map_ids and state.peek(node.id).status != TaskStatus.PENDING:
            if state.cancel_requested:
                yield from _items_scanned(definition, state, node)
            else:  # the live items that may need attention, in index order
                yield from _attended_items(definition, state, node)
        if node.compensation is not None and f"{node.id}{COMPENSATION_SUFFIX}" in state.nodes:
            yield definition.node_for(f"{node.id}{COMPENSATION_SUFFIX}")


#: Live items that wait for their worker: nothing to attend to (decide's _attend skips them).
_WORKING = frozenset({TaskStatus.SCHEDULED, TaskStatus.RUNNING})


def _attended_items(definition: Definition, state: ExecutionState, node: Node) -> Iterator[Node]:
    """The map's live items but those with a worker (failed, retrying, waiting...), in
    index order: of what the scan below gives outside a cancel, all _attend looks at,
    without building a Node for each of the max_parallel items running."""
    live = state.maps.get(node.id, _NONE_YET).live
    nodes = state.nodes
    wanted = {child for child in live if nodes[child].status not in _WORKING}
    if wanted:
        for child in _in_order(wanted, len(item_ids(state, node))):
            yield definition.node_for(child)


def _items_scanned(definition: Definition, state: ExecutionState, node: Node) -> Iterator[Node]:
    """Every item of a started map that is not done (pending ones too: a cancel's)."""
    nodes = state.nodes
    for child in item_ids(state, node):
        if _status(nodes.get(child)) not in _DONE:
            yield definition.node_for(child)


def _in_order(live: set[str], count: int) -> list[str]:
    """The live items of a map of `count` items, in index order (an item of an earlier
    run with more items than this one has is no item of it)."""
    ordered = sorted((item_of(child), child) for child in live)
    return [child for item, child in ordered if item is not None and item[1] < count]


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
    tracked = state.maps.get(node.id, _NONE_YET)
    if not tracked.prefix() or tracked.bound >= len(ids):
        yield from _progress_scanned(definition, state, node, context, now)
        return
    # Every item shares the map's body, so one Node answers the policy questions for all.
    body = definition.node_for(ids[0]) if ids else node
    live = [(child, state.peek(child)) for child in _in_order(tracked.live, len(ids))]
    failed = [child for child, current in live if failed_for_good(body, current)]
    active = sum(current.status in TASK_ACTIVE for _, current in live)
    room = max_parallel(node) - active
    # Items 0..started-1 are live or done; the rest are pending, in index order.
    started = tracked.started
    for index in range(started, len(ids)):
        child = ids[index]
        if failed:
            yield decided(EventType.TASK_SKIPPED, Reason(reason="another item failed"), child)
        elif room > 0:
            room -= 1
            scope = {**context, "item": items[index], "index": index}
            current = state.nodes.get(child)  # an operator's retry may have left one
            attempt = current.attempt if current is not None else 0
            yield from start_node(definition.node_for(child), attempt + 1, scope, now)
        else:
            break
    if started == len(ids) and len(failed) == len(live):
        yield _ended(state, node, ids, failed)


def _progress_scanned(
    definition: Definition,
    state: ExecutionState,
    node: Node,
    context: dict[str, Any],
    now: datetime | None,
) -> Iterator[Decision]:
    """_progress_one by a pass over every item: for a map whose pending items are not all
    after its started ones (an operator's retry of some items)."""
    items = state.peek(node.id).input["items"]
    ids = item_ids(state, node)
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
    if settled:
        yield _ended(state, node, ids, failed)


def _ended(state: ExecutionState, node: Node, ids: Sequence[str], failed: list[str]) -> Decision:
    """Every item settled: the map fails with its first failed item, or succeeds with the
    items' outputs in item order."""
    attempt = state.peek(node.id).attempt
    if failed:
        error = ErrorRecord(
            "MapItemFailed",
            f"item {failed[0]} failed",
            retryable=False,
            details={"items": failed, "cause": state.peek(failed[0]).error},
        )
        return decided(EventType.TASK_FAILED, TaskFailed(error=error), node.id, attempt)
    output = TaskCompleted(output=[state.peek(cid).output for cid in ids])
    return decided(EventType.TASK_COMPLETED, output, node.id, attempt)
