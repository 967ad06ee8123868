"""The folded state of one execution. Plain data, JSON-round-trippable for snapshots."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, TypeVar

from executions.engine.statuses import ExecutionStatus, TaskStatus

_DATETIME_FIELDS = {"started_at", "ended_at", "next_retry_at", "now", "due_at", "deadline_at"}


@dataclass
class NodeState:
    node_id: str
    status: str = TaskStatus.PENDING
    #: The latest attempt number scheduled (0: never scheduled).
    attempt: int = 0
    #: attempt when an operator last asked for a retry: the policy's budget counts from here.
    attempt_base: int = 0
    retry_count: int = 0
    input: Any = None
    output: Any = None
    error: dict[str, Any] | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    next_retry_at: datetime | None = None
    #: A retry timer fired: the next attempt may be scheduled.
    retry_due: bool = False
    #: A delay node's timer fired.
    timer_fired: bool = False
    #: An approval node's decision: {"approved": bool, "data":..., "comment":...}.
    signal: dict[str, Any] | None = None
    #: Why the node was skipped or cancelled.
    reason: str | None = None
    #: seq of the node's completion, for compensation order and audits.
    completed_seq: int | None = None
    #: Attempts that reported task_started, to prove a node ran no more than recorded.
    started_attempts: list[int] = field(default_factory=list)
    #: An operator failed the node while it was parked: it is failed for good, as it
    #: would have been without on_exhausted "park" (a new attempt clears it).
    given_up: bool = False

    @property
    def tries(self) -> int:
        """Attempts since the start or the last operator retry: what the policy limits."""
        return self.attempt - self.attempt_base


#: Item statuses a map counts as done: nothing more happens to the item (no retry, no wake-up).
ITEM_DONE = frozenset({TaskStatus.SUCCEEDED, TaskStatus.SKIPPED, TaskStatus.CANCELLED})


def item_of(node_id: str) -> tuple[str, int] | None:
    """(map id, index) of a map's item task `<map id>[<index>]`; None for any other node."""
    if node_id[-1:] != "]":
        return None
    map_id, bracket, rest = node_id.partition("[")
    digits = rest[:-1]
    if not bracket or not digits.isdigit():
        return None
    return map_id, int(digits)


@dataclass
class MapItems:
    """What fold keeps of one map's items, so decide looks only at the items that can
    still change (a few: at most max_parallel run at once) instead of every item on
    every call. Derived, never stored: snapshots rebuild it from the node states.

    Pending items (no event yet, or reset by an operator's retry) are in no field."""

    #: Items neither pending nor done: scheduled, running, retrying, waiting, failed...
    live: set[str] = field(default_factory=set)
    #: How many items are done (ITEM_DONE).
    done: int = 0
    #: No item past this index is live or done (-1: none is). Never lowered, so after an
    #: operator's retry it may be above the highest: `prefix` then says no.
    bound: int = -1

    @property
    def started(self) -> int:
        """Items not pending."""
        return self.done + len(self.live)

    def prefix(self) -> bool:
        """The items not pending are exactly 0..bound, so the pending ones are those after
        (items start and are skipped in index order; only an operator's retry makes gaps)."""
        return self.started == self.bound + 1

    def moved(self, node_id: str, index: int, old: str, new: str) -> None:
        """Item `node_id` went from status `old` to `new`."""
        if old == TaskStatus.PENDING:
            pass
        elif old in ITEM_DONE:
            self.done -= 1
        else:
            self.live.discard(node_id)
        if new == TaskStatus.PENDING:
            return
        if new in ITEM_DONE:
            self.done += 1
        else:
            self.live.add(node_id)
        if index > self.bound:
            self.bound = index

    def copy(self) -> MapItems:
        return MapItems(set(self.live), self.done, self.bound)


@dataclass
class ExecutionState:
    execution_id: str
    status: str = ExecutionStatus.PENDING
    input: Any = None
    output: Any = None
    error: dict[str, Any] | None = None
    nodes: dict[str, NodeState] = field(default_factory=dict)
    last_seq: int = 0
    #: Timestamp of the last folded event: the engine's only notion of "now".
    now: datetime | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    cancel_requested: bool = False
    #: workflow_paused without a workflow_resumed since: decide holds back all new work.
    paused: bool = False
    #: An engine_error fact's error: decide ends the execution with it (engine/containment.py).
    engine_error: dict[str, Any] | None = None
    #: The bounds recorded in workflow_started, in force for every decision of this
    #: execution (workflows/dsl/limits.py `recorded`); None: a history from before that.
    limits: dict[str, Any] | None = None
    #: The faults injected into this execution (engine/faults.py); None: none.
    faults: dict[str, Any] | None = None
    #: Named signals sent before a node waited for them, oldest first, in their stored
    #: form (engine/waits.py). Rebound, never mutated in place: forks share it.
    signals: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: When the execution times out (workflow_started's deadline_at); None: never.
    deadline_at: datetime | None = None
    #: The deadline's timer fired: decide times the execution out.
    deadline_passed: bool = False
    #: workflow_timed_out was decided: its nodes are being stopped, its saga run.
    timed_out: bool = False
    #: The client's tags (workflow_started), {key: value}.
    tags: dict[str, str] = field(default_factory=dict)
    #: Each map's items by what decide needs of them (fold keeps it; never stored).
    maps: dict[str, MapItems] = field(default_factory=dict, compare=False, repr=False)
    #: What templates see of each node, {"output", "status"} (engine/context.py), kept by
    #: fold as nodes change: built from every node on each decide call it cost O(nodes),
    #: and a map of 10,000 items is decided upon 20,000 times. Derived, never stored.
    seen: dict[str, dict[str, Any]] = field(default_factory=dict, compare=False, repr=False)

    def node(self, node_id: str) -> NodeState:
        """The node's state; a node no event has mentioned yet is pending."""
        found = self.nodes.get(node_id)
        if found is None:
            found = self.nodes[node_id] = NodeState(node_id)
        return found

    def peek(self, node_id: str) -> NodeState:
        """The node's state for reading only: a node no event has mentioned yet is a fresh
        pending one, not added. decide's steps read the state they are given (no copy
        until they fold), so they must read through here, never `node`."""
        found = self.nodes.get(node_id)
        return found if found is not None else NodeState(node_id)

    def copy(self) -> ExecutionState:
        return copy.deepcopy(self)

    def fork(self) -> ExecutionState:
        """A copy-on-write working copy: O(nodes) pointer copies, no deep copy.

        Node states are shared with `self` until `own(node_id)` gives the fork its own
        copy, which the caller must do before folding an event about that node into it.
        A node copy is shallow: fold handlers rebind fields (input, output, error, ...)
        and never mutate them in place, except `started_attempts` (task_started), which a
        fork must therefore never be given.
        """
        forked = _shallow(self)
        forked.nodes = dict(self.nodes)
        forked.maps = {map_id: items.copy() for map_id, items in self.maps.items()}
        forked.seen = dict(self.seen)  # fold rebinds its entries, never changes one
        return forked

    def own(self, node_id: str) -> NodeState:
        """In a fork: the node's state, copied from the shared one if not yet copied."""
        node = _shallow(self.node(node_id))
        self.nodes[node_id] = node
        return node

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, sharing (not copying) the user data inside: serialize it at once."""
        raw = {
            key: _flat(value)
            for key, value in self.__dict__.items()
            if key not in ("nodes", "maps", "seen")  # maps, seen: derived (from_dict)
        }
        raw["nodes"] = {
            node_id: {key: _flat(value) for key, value in node.__dict__.items()}
            for node_id, node in self.nodes.items()
        }
        return raw

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ExecutionState:
        data = _decode(raw)
        nodes = {key: NodeState(**value) for key, value in data.pop("nodes").items()}
        known = {f.name for f in fields(cls)} - {"maps", "seen"}
        state = cls(nodes=nodes, **{k: v for k, v in data.items() if k in known})
        state.maps = map_items(nodes)
        state.seen = {node_id: seen(node) for node_id, node in nodes.items()}
        return state


def seen(node: NodeState) -> dict[str, Any]:
    """What templates see of a node: `{{ nodes.<id>.output }}` and `.status`."""
    return {"output": node.output, "status": node.status}


def map_items(nodes: dict[str, NodeState]) -> dict[str, MapItems]:
    """ExecutionState.maps as the node states give it (what fold keeps, event by event)."""
    maps: dict[str, MapItems] = {}
    for node_id, node in nodes.items():
        item = item_of(node_id)
        if item is not None and node.status != TaskStatus.PENDING:
            maps.setdefault(item[0], MapItems()).moved(
                node_id, item[1], TaskStatus.PENDING, node.status
            )
    return maps


_T = TypeVar("_T")


def _shallow(obj: _T) -> _T:
    """copy.copy for these plain dataclasses, without its __reduce_ex__ round trip (~10x)."""
    clone: _T = object.__new__(type(obj))
    clone.__dict__.update(obj.__dict__)
    return clone


def _flat(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def _decode(value: Any, key: str | None = None) -> Any:
    if isinstance(value, dict):
        if key in ("input", "output", "error", "signal", "engine_error", "signals", "tags"):
            return value  # user JSON: never reinterpret its strings
        return {k: _decode(item, k) for k, item in value.items()}
    if key in _DATETIME_FIELDS and isinstance(value, str):
        return datetime.fromisoformat(value)
    return value
