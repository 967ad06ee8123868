"""Nodes that wait in the orchestrator: a delay's timer, an approval's answer, a signal.

What decide makes of a waiting node (`attend`), how a signal is folded
(`signal_received`), and the deadline a waiting kind's timeout_seconds puts in its
task_scheduled (`deadline`). A named signal (POST /executions/{id}/signals/{name}) is
recorded without a node; fold keeps it in `state.signals` until a `signal` node waits for
that name, and decide then delivers it (a signal_received with the node), oldest first.

Pure Python: no Django.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from executions.engine import payloads as p
from executions.engine.errors import ErrorRecord
from executions.engine.events import Decision, Event, EventType
from executions.engine.state import ExecutionState, NodeState
from executions.engine.statuses import TaskStatus
from executions.engine.timeutil import plus_seconds
from workflows.dsl import Node, NodeBody
from workflows.kinds import get_kind
from workflows.kinds.approval import ApprovalSpec
from workflows.kinds.base import spec_of
from workflows.kinds.signal import SignalSpec

#: The name on_timeout has when an approval does not say.
DEFAULT_ON_TIMEOUT = "reject"


def deadline(node: NodeBody, now: datetime | None) -> str | None:
    """When a waiting kind's wait ends unanswered; None: it waits as long as it takes."""
    kind = get_kind(node.type)
    if kind is None or not kind.times_out_waiting or node.timeout_seconds is None:
        return None
    return plus_seconds(now, node.timeout_seconds).isoformat()


def signal_received(state: ExecutionState, event: Event) -> None:
    """fold: an approval's answer or a delivered signal goes to its waiting node (the first
    answer of an attempt wins); a named signal without a node is kept for later."""
    payload = p.decode(p.SignalReceived, event.data, event.payload)
    # Kept in its stored form: the state is plain JSON (snapshots); decide reads it
    # back as a SignalReceived.
    stored = p.to_json(payload)
    name = payload.name
    if not event.node_id:
        if name is not None:
            state.signals = {**state.signals, name: [*state.signals.get(name, ()), stored]}
        return
    node = state.node(event.node_id)
    if node.status != TaskStatus.WAITING or node.signal is not None:
        return
    node.signal = stored
    if name is not None and state.signals.get(name):
        rest = state.signals[name][1:]
        others = {k: v for k, v in state.signals.items() if k != name}
        state.signals = {**others, name: rest} if rest else others


def attend(
    node: Node, current: NodeState, state: ExecutionState, taken: dict[str, int] | None = None
) -> Iterator[Decision]:
    """decide, for a node in `waiting`: its answer, its timer, or a kept signal. `taken`
    counts, per name, the kept signals this pass already delivered: nodes waiting for the
    same name at once get one signal each, oldest first (fold takes each from the head)."""
    node_id = node.id
    if current.signal is not None:
        yield _answer(node, node_id, current)
    elif current.timer_fired:
        kind = get_kind(node.type)
        if kind is not None and kind.times_out_waiting:
            yield from _timed_out(node, node_id, current)
        else:  # a delay's timer
            waited = p.TaskCompleted(output={"waited_until": _due_at(current)})
            yield p.decided(EventType.TASK_COMPLETED, waited, node_id, current.attempt)
    elif state.signals and isinstance(node.spec, SignalSpec):
        name = node.spec.name
        kept = state.signals.get(name)
        index = taken.get(name, 0) if taken is not None else 0
        if kept and index < len(kept):
            if taken is not None:
                taken[name] = index + 1
            signal = p.decode(p.SignalReceived, kept[index])
            yield p.decided(EventType.SIGNAL_RECEIVED, signal, node_id, current.attempt)


def _due_at(current: NodeState) -> str | None:
    """When a delay node's timer was due: its input is its timer_started input,
    {"seconds" or "until", "due_at"} (engine/nodes.py)."""
    timer = current.input
    return timer.get("due_at") if isinstance(timer, dict) else None


def _answer(node: NodeBody, node_id: str, current: NodeState) -> Decision:
    signal = p.decode(p.SignalReceived, current.signal or {})
    if isinstance(node.spec, SignalSpec):
        got = p.TaskCompleted(output=signal.data)
        return p.decided(EventType.TASK_COMPLETED, got, node_id, current.attempt)
    answer = {"data": signal.data, "comment": signal.comment, "by": signal.by}
    if signal.decision == "approve":
        approved = p.TaskCompleted(output={"approved": True, **answer})
        return p.decided(EventType.TASK_COMPLETED, approved, node_id, current.attempt)
    error = ErrorRecord("Rejected", "approval rejected", retryable=False, details=answer)
    return p.decided(EventType.TASK_FAILED, p.TaskFailed(error=error), node_id, current.attempt)


def _timed_out(node: NodeBody, node_id: str, current: NodeState) -> Iterator[Decision]:
    seconds = node.timeout_seconds
    attempt = current.attempt
    if isinstance(node.spec, SignalSpec):
        name = node.spec.name
        error = ErrorRecord("Timeout", f"no signal '{name}' within {seconds:g} seconds", True)
        yield p.decided(EventType.TASK_TIMED_OUT, p.TaskFailed(error=error), node_id, attempt)
        return
    on_timeout = spec_of(node, ApprovalSpec).on_timeout
    record = p.ApprovalTimedOut(on_timeout=on_timeout, timeout_seconds=seconds)
    yield p.decided(EventType.APPROVAL_TIMED_OUT, record, node_id, attempt)
    silence = f"no answer within {seconds:g} seconds"
    if on_timeout == "approve":
        output = {"approved": True, "timed_out": True, "data": None, "comment": None, "by": None}
        yield p.decided(EventType.TASK_COMPLETED, p.TaskCompleted(output=output), node_id, attempt)
    elif on_timeout == "fail":
        # A timed-out attempt like any other: the node's retry_policy may wait again.
        error = ErrorRecord("Timeout", f"approval: {silence}", retryable=True)
        yield p.decided(EventType.TASK_TIMED_OUT, p.TaskFailed(error=error), node_id, attempt)
    else:
        details = {"timed_out": True}
        error = ErrorRecord("Rejected", f"approval rejected: {silence}", False, details=details)
        yield p.decided(EventType.TASK_FAILED, p.TaskFailed(error=error), node_id, attempt)
