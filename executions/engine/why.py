"""Why is a node not running (yet, or any more)? A pure function of the definition, the
folded state and the operational rows the shell read (attempts, timers, children).

Every reason is `{"code", "message", ...}` with the code's own fields (what GET
/executions/{id}/why answers). Reasons come from two tables of small rules:
EXECUTION_RULES give the reasons that hold for every unsettled node (paused, ended, not
started yet) and NODE_RULES the node's own (by its status). A later feature adds its
reason as one more rule: workflow-level concurrency (`concurrency_limit`) to
EXECUTION_RULES, pools (`pool_full`) to NODE_RULES for scheduled nodes, reading its rows
from `Rows.extra`.

Pure Python: no Django.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from executions.engine import maps
from executions.engine.context import template_context
from executions.engine.decide import TIMED_OUT
from executions.engine.rules import (
    RUNS_AFTER_FAILURE,
    Verdict,
    failed_for_good,
    is_settled,
    trigger_verdict,
)
from executions.engine.state import ExecutionState, NodeState
from executions.engine.statuses import EXECUTION_TERMINAL, TASK_ACTIVE, ExecutionStatus, TaskStatus
from workflows.dsl import Definition, Node
from workflows.dsl.model import COMPENSATION_SUFFIX
from workflows.dsl.templates import TemplateError, search
from workflows.kinds import get_kind

Reason = dict[str, Any]


@dataclass(frozen=True)
class AttemptRow:
    """The latest attempt row of a node run by a worker."""

    attempt: int
    status: str
    scheduled_at: datetime | None = None
    worker: str = ""
    lease_expires_at: datetime | None = None
    #: False: held, not in the broker (its pool is full, or its execution has its cap of
    #: messages out: executions/kernel/capacity.py).
    published: bool = True
    #: Its function runs in the transaction that records its result (transactional).
    transactional: bool = False


@dataclass(frozen=True)
class Rows:
    """What the shell read beside the log. Missing entries are allowed: a rule then says
    what the state alone tells."""

    #: node id -> its latest attempt row.
    attempts: Mapping[str, AttemptRow] = field(default_factory=dict)
    #: node id -> due time of its unfired timer (a delay's or a retry's backoff).
    timers: Mapping[str, datetime] = field(default_factory=dict)
    #: node id -> the child execution its latest attempt started (workflow nodes).
    children: Mapping[str, str] = field(default_factory=dict)
    #: A scheduled start (start_at) not yet due: when the execution begins.
    start_due_at: datetime | None = None
    #: Rows of later features (concurrency slots, pools), by the name their rule reads.
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Scene:
    """One explanation's inputs, shared by every rule."""

    definition: Definition
    state: ExecutionState
    rows: Rows


ExecutionRule = Callable[[Scene], Iterator[Reason]]
NodeRule = Callable[[Scene, Node, NodeState], Iterator[Reason]]


def why(definition: Definition, state: ExecutionState, rows: Rows) -> list[dict[str, Any]]:
    """`{"node_id", "status", "reasons"}` for every node (map items and compensation
    tasks included) that is not settled, in definition order."""
    scene = Scene(definition, state, rows)
    shared = _execution_reasons(scene)
    return [
        _entry(scene, node, shared)
        for node in _nodes(definition, state)
        if not is_settled(node, state.nodes.get(node.id) or NodeState(node.id))
    ]


def why_node(
    definition: Definition, state: ExecutionState, rows: Rows, node_id: str
) -> dict[str, Any]:
    """One node's entry, settled or not (a skipped node says why it was skipped). Raises
    KeyError for a node id the definition does not have."""
    node = definition.node_for(node_id)
    scene = Scene(definition, state, rows)
    current = state.nodes.get(node_id) or NodeState(node_id)
    if is_settled(node, current):
        return {"node_id": node_id, "status": current.status, "reasons": _settled(scene, node)}
    return _entry(scene, node, _execution_reasons(scene))


def _nodes(definition: Definition, state: ExecutionState) -> Iterator[Node]:
    """The definition's nodes, every item of each started map, every started compensation."""
    for node in definition.nodes:
        yield node
        if node.id in definition.map_ids and _seen(state, node.id).status != TaskStatus.PENDING:
            for item in maps.item_ids(state, node):
                yield definition.node_for(item)
    for node_id in state.nodes:
        if node_id.endswith(COMPENSATION_SUFFIX):
            yield definition.node_for(node_id)


def _entry(scene: Scene, node: Node, shared: list[Reason]) -> dict[str, Any]:
    current = scene.state.nodes.get(node.id) or NodeState(node.id)
    own = [
        reason
        for rule in NODE_RULES.get(current.status, ())
        for reason in rule(scene, node, current)
    ]
    return {"node_id": node.id, "status": current.status, "reasons": own + shared}


def _execution_reasons(scene: Scene) -> list[Reason]:
    return [reason for rule in EXECUTION_RULES for reason in rule(scene)]


def _seen(state: ExecutionState, node_id: str) -> NodeState:
    """state.node() without adding the node to the state: explaining changes nothing."""
    return state.nodes.get(node_id) or NodeState(node_id)


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


# Execution-level rules: they hold for every unsettled node.


def _paused(scene: Scene) -> Iterator[Reason]:
    if scene.state.paused:
        yield {
            "code": "execution_paused",
            "message": "the execution is paused: nothing new starts until it is resumed",
        }


def _ended(scene: Scene) -> Iterator[Reason]:
    state = scene.state
    if state.status in EXECUTION_TERMINAL:
        yield {"code": "execution_ended", "message": f"the execution has {state.status}"}
    elif state.cancel_requested:
        yield {
            "code": "execution_ended",
            "message": "a cancel was requested: the execution is ending",
        }
    elif state.deadline_passed:
        yield _timed_out(state, "the execution ran past its deadline {}: it is ending")


def _timed_out(state: ExecutionState, message: str) -> Reason:
    deadline = _iso(state.deadline_at)
    return {
        "code": "workflow_timeout",
        "message": message.format(deadline),
        "deadline_at": deadline,
    }


def _not_started(scene: Scene) -> Iterator[Reason]:
    if scene.state.status == ExecutionStatus.PENDING and CONCURRENCY not in scene.rows.extra:
        due = scene.rows.start_due_at
        yield {
            "code": "timer",
            "message": "the execution has not started yet"
            + (f": it starts at {due.isoformat()}" if due else ""),
            "due_at": _iso(due),
        }


#: Rows.extra's entry for a held execution: {"key", "limit", "running", "ahead"}.
CONCURRENCY = "concurrency"


def _concurrency_limit(scene: Scene) -> Iterator[Reason]:
    """Held: its workflow's concurrency key is full, or others wait ahead of it."""
    held = scene.rows.extra.get(CONCURRENCY)
    if held is None or scene.state.status != ExecutionStatus.PENDING:
        return
    key, limit, ahead = held["key"], held["limit"], held.get("ahead") or 0
    queue = f"; {ahead} waiting ahead of it" if ahead else "; it is next"
    yield {
        "code": "concurrency_limit",
        "message": f"the workflow's concurrency key '{key}' has {held.get('running', limit)} "
        f"of {limit} executions running{queue} (first in, first out)",
        "key": key,
        "limit": limit,
        "running": held.get("running"),
        "ahead": ahead,
    }


EXECUTION_RULES: list[ExecutionRule] = [_not_started, _concurrency_limit, _paused, _ended]


# Node-level rules, by the node's status.


def _parents(scene: Scene, node: Node, current: NodeState) -> Iterator[Reason]:
    """A pending node: what its trigger rule waits for, or why it would not run."""
    state, definition = scene.state, scene.definition
    if state.status != ExecutionStatus.RUNNING and not state.paused:
        return  # not started, or ending: the execution's reason says it all
    if "[" in node.id:
        yield from _map_item(scene, node)
        return
    verdict = trigger_verdict(definition, state, node)
    if verdict is Verdict.WAIT:
        waiting = [
            {"node_id": p, "status": _seen(state, p).status}
            for p in node.depends_on
            if not is_settled(definition.by_id[p], _seen(state, p))
        ]
        names = ", ".join(p["node_id"] for p in waiting)
        yield {
            "code": "waiting_for_parents",
            "message": f"waiting for {names} to finish (trigger rule {node.trigger_rule})",
            "parents": waiting,
        }
        return
    if verdict is Verdict.SKIP:
        yield _trigger_reason(scene, node)
        return
    failed = _failed_nodes(scene)
    if failed and node.trigger_rule not in RUNS_AFTER_FAILURE:
        yield _upstream_failed(failed, "the execution is failing")
        return
    if node.when is not None and not _when_holds(scene, node):
        yield {"code": "condition_false", "message": f"when is false: {node.when}"}


def _map_item(scene: Scene, item: Node) -> Iterator[Reason]:
    """A pending map item waits for a free slot under the map's max_parallel."""
    map_id = item.id.split("[", 1)[0]
    map_node = scene.definition.by_id[map_id]
    items = [scene.state.nodes.get(i) for i in maps.item_ids(scene.state, map_node)]
    active = sum(1 for i in items if i is not None and i.status in TASK_ACTIVE)
    limit = maps.max_parallel(map_node)
    yield {
        "code": "max_parallel",
        "message": f"{active} of {map_id}'s items are running, at most {limit} at once",
        "node_id": map_id,
        "limit": limit,
    }


def _trigger_reason(scene: Scene, node: Node) -> Reason:
    failed = [
        p
        for p in node.depends_on
        if _seen(scene.state, p).status in (TaskStatus.FAILED, TaskStatus.CANCELLED)
    ]
    if failed:
        return _upstream_failed(failed, f"trigger rule {node.trigger_rule}")
    return {
        "code": "trigger_rule",
        "message": f"trigger rule {node.trigger_rule} does not hold: "
        + ", ".join(f"{p} is {_seen(scene.state, p).status}" for p in node.depends_on),
        "trigger_rule": node.trigger_rule,
    }


def _upstream_failed(nodes: list[str], why: str) -> Reason:
    return {
        "code": "upstream_failed",
        "message": f"{', '.join(nodes)} failed: {why}",
        "nodes": nodes,
    }


def _failed_nodes(scene: Scene) -> list[str]:
    nodes = scene.state.nodes
    return [
        n.id for n in scene.definition.nodes if n.id in nodes and failed_for_good(n, nodes[n.id])
    ]


def _when_holds(scene: Scene, node: Node) -> bool:
    try:
        return bool(search(node.when or "", template_context(scene.state)))
    except TemplateError:
        return True  # starting it will fail the node with the template's error


def _scheduled(scene: Scene, node: Node, current: NodeState) -> Iterator[Reason]:
    row = scene.rows.attempts.get(node.id)
    if node.pool and row is not None and not row.published:
        return  # _pool_full says why
    if node.id in scene.rows.extra.get("rates", {}):
        return  # _rate_limited says why
    message = "scheduled, waiting for a worker to claim it"
    if row is not None and not row.published:
        cap = scene.rows.extra.get("in_flight_cap")
        message = (
            f"scheduled and held: its execution already has {cap} messages in the broker "
            "(WORKFLOW_MAX_IN_FLIGHT_PER_EXECUTION); it is sent when one is claimed"
        )
    yield {
        "code": "queued",
        "message": message,
        "scheduled_at": _iso(row.scheduled_at if row else None),
    }


def _pool_full(scene: Scene, node: Node, current: NodeState) -> Iterator[Reason]:
    """A pool node held until its pool has a free slot (`Rows.extra["pools"]`: name ->
    {"slots", "running"}, read by executions/services/why.py)."""
    row = scene.rows.attempts.get(node.id)
    if not node.pool or row is None or row.published:
        return
    pool = scene.rows.extra.get("pools", {}).get(node.pool, {})
    slots, running = pool.get("slots"), pool.get("running")
    yield {
        "code": "pool_full",
        "message": f"waiting for a free slot in pool {node.pool} "
        f"({running} of {slots} slots in use)",
        "pool": node.pool,
        "slots": slots,
        "running": running,
    }


def _rate_limited(scene: Scene, node: Node, current: NodeState) -> Iterator[Reason]:
    """An attempt its rate limit sent back to wait (`Rows.extra["rates"]`: node id ->
    {"key", "per_second", "burst", "due_at"}, read by executions/services/why.py)."""
    rate = scene.rows.extra.get("rates", {}).get(node.id)
    if rate is None or (node.pool and node.pool in scene.rows.extra.get("pools", {})):
        return
    yield {
        "code": "rate_limited",
        "message": f"waiting for its rate limit ({rate['per_second']:g} a second on "
        f"{rate['key']}); it may start at {rate['due_at']}",
        **rate,
    }


def _running(scene: Scene, node: Node, current: NodeState) -> Iterator[Reason]:
    kind = get_kind(node.type)
    child = scene.rows.children.get(node.id)
    if child is not None or (kind is not None and kind.starts_child):
        yield {
            "code": "waiting_for_child",
            "message": f"waiting for the child execution {child or '(starting)'} to end",
            "child_execution_id": child,
        }
        return
    if kind is not None and kind.fans_out:
        items = [scene.state.nodes.get(i) for i in maps.item_ids(scene.state, node)]
        waiting = (TaskStatus.PENDING, TaskStatus.PARKED, *TASK_ACTIVE)
        done = sum(1 for i in items if i is not None and i.status not in waiting)
        parked = sum(1 for i in items if i is not None and i.status == TaskStatus.PARKED)
        # A parked item is not done: it waits for an operator, and the map with it.
        waits = f"; {parked} parked, waiting for an operator's retry or fail" if parked else ""
        yield {
            "code": "running",
            "message": f"{done} of {len(items)} items done{waits}",
            "worker": None,
            "lease_expires_at": None,
        }
        return
    row = scene.rows.attempts.get(node.id)
    worker = row.worker if row else ""
    message = f"running on {worker or 'a worker'}"
    transactional = row is not None and row.transactional
    if transactional:
        message += ", in one database transaction with its result: its writes commit only with it"
    reason: Reason = {
        "code": "running",
        "message": message,
        "worker": worker or None,
        "lease_expires_at": _iso(row.lease_expires_at if row else None),
    }
    if transactional:
        reason["transactional"] = True
    yield reason


def _retrying(scene: Scene, node: Node, current: NodeState) -> Iterator[Reason]:
    due = current.next_retry_at or scene.rows.timers.get(node.id)
    yield {
        "code": "retry_backoff",
        "message": f"attempt {current.attempt} failed; the next one is due at {_iso(due)}"
        + (" (due: it starts on resume)" if current.retry_due else ""),
        "due_at": _iso(due),
        "attempt": current.attempt + 1,
    }


def _failed(scene: Scene, node: Node, current: NodeState) -> Iterator[Reason]:
    # Not for good (else it is settled): the retry is decided with the next decision.
    yield {
        "code": "retry_backoff",
        "message": f"attempt {current.attempt} failed; a retry is about to be scheduled",
        "due_at": None,
        "attempt": current.attempt + 1,
    }


def _waiting(scene: Scene, node: Node, current: NodeState) -> Iterator[Reason]:
    kind = get_kind(node.type)
    # An approval's or a signal's timeout_seconds: its unfired timer (None: none set).
    timeout_at = _iso(scene.rows.timers.get(node.id))
    if kind is not None and kind.approvable:
        if current.signal is None:
            yield {
                "code": "waiting_for_approval",
                "message": "waiting for POST .../approve or .../reject",
                "approvers": list(getattr(node.spec, "approvers", ()) or ()),
                "timeout_at": timeout_at,
            }
        return
    if node.type == "signal":
        name = getattr(node.spec, "name", None)  # workflows/kinds/signal.py SignalSpec
        if current.signal is None:
            yield {
                "code": "waiting_for_signal",
                "message": f"waiting for POST .../signals/{name}",
                "signal": name,
                "timeout_at": timeout_at,
            }
        return
    timer = current.input if isinstance(current.input, dict) else {}
    due = timer.get("due_at") or _iso(scene.rows.timers.get(node.id))
    yield {
        "code": "timer",
        "message": f"waiting until {due}"
        + (" (due: it completes on resume)" if current.timer_fired else ""),
        "due_at": due,
    }


def _parked(scene: Scene, node: Node, current: NodeState) -> Iterator[Reason]:
    yield {
        "code": "parked",
        "message": f"out of attempts ({current.tries}); waiting for POST "
        f".../tasks/{node.id}/retry (another round) or .../fail",
        "attempts": current.tries,
        "error": current.error,
    }


NODE_RULES: dict[str, list[NodeRule]] = {
    TaskStatus.PENDING: [_parents],
    TaskStatus.SCHEDULED: [_scheduled, _pool_full, _rate_limited],
    TaskStatus.RUNNING: [_running],
    TaskStatus.RETRYING: [_retrying],
    TaskStatus.FAILED: [_failed],
    TaskStatus.WAITING: [_waiting],
    TaskStatus.PARKED: [_parked],
}


# A settled node: why it did not (or will not again) run.

_RECORDED = {
    "when is false": "condition_false",
    "execution is failing": "upstream_failed",
    "another item failed": "upstream_failed",
}


def _settled(scene: Scene, node: Node) -> list[Reason]:
    current = _seen(scene.state, node.id)
    if current.status == TaskStatus.SKIPPED:
        code = _RECORDED.get(current.reason or "")
        if code is None:
            return [_trigger_reason(scene, node)]
        message = f"skipped: {current.reason}"
        if code == "condition_false":
            message = f"skipped: when is false: {node.when}"
        return [{"code": code, "message": message}]
    if current.status == TaskStatus.CANCELLED and current.reason == TIMED_OUT:
        return [_timed_out(scene.state, "cancelled: the execution ran past its deadline {}")]
    if current.status == TaskStatus.CANCELLED:
        return [{"code": "execution_ended", "message": f"cancelled: {current.reason}"}]
    return []  # succeeded or failed for good: it ran
