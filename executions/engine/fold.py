"""fold(events) -> state: a table of transitions, one function per event type.

Each handler reads its event's typed payload (engine/payloads.py), never the raw dict:
`decode(cls, event.data, event.payload)` (the payload an event carries inside decide), or
for the steps that read one or two plain fields, that field's typed reader
(engine/readers.py: the same value, without decoding the rest).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime

from executions.engine import payloads as p
from executions.engine import readers as r
from executions.engine import waits
from executions.engine.errors import ErrorRecord
from executions.engine.events import Event, EventType
from executions.engine.state import ExecutionState, MapItems, NodeState, item_of, seen
from executions.engine.statuses import EXECUTION_TERMINAL, ExecutionStatus, TaskStatus
from workflows.kinds import get_kind

#: TimerFired.kind of the execution's deadline (the timer has no node).
DEADLINE = "deadline"


def fold(
    events: Iterable[Event], state: ExecutionState | None = None, *, execution_id: str = ""
) -> ExecutionState:
    """The state after `events`, starting from `state` (never mutated) or from nothing."""
    result = state.copy() if state is not None else ExecutionState(execution_id)
    for event in events:
        apply_event(result, event)
    return result


def apply_event(state: ExecutionState, event: Event) -> None:
    """Fold one event into `state` in place. Events must come in seq order."""
    if event.seq != state.last_seq + 1:
        raise ValueError(
            f"event seq {event.seq} does not follow {state.last_seq}: the log has a gap"
        )
    state.last_seq = event.seq
    state.now = event.timestamp
    handler = _HANDLERS.get(event.type)
    if handler is None:
        return
    node_id = event.node_id
    if node_id is not None:
        touched: Iterable[str] = (node_id,)
    elif event.type == EventType.RETRY_REQUESTED:
        touched = p.decode(p.RetryRequested, event.data, event.payload).nodes
    else:
        handler(state, event)  # no node changes
        return
    nodes = state.nodes
    before = [(n, nodes[n].status if n in nodes else TaskStatus.PENDING) for n in touched]
    handler(state, event)
    # What fold keeps beside the node states (derived): what templates see of each node
    # touched, and map items by status (ExecutionState.maps).
    for changed, old in before:
        after = nodes.get(changed)
        if after is None:
            continue
        state.seen[changed] = seen(after)
        item = item_of(changed) if after.status != old else None
        if item is not None:
            map_id, index = item
            tracked = state.maps.get(map_id)
            if tracked is None:
                tracked = state.maps[map_id] = MapItems()
            tracked.moved(changed, index, old, after.status)


def _current(state: ExecutionState, event: Event) -> NodeState | None:
    """The node an event is about, or None if the event speaks of a superseded attempt."""
    node = state.node(event.node_id or "")
    if event.attempt is not None and event.attempt < node.attempt:
        return None
    return node


def _workflow_started(state: ExecutionState, event: Event) -> None:
    payload = p.decode(p.WorkflowStarted, event.data, event.payload)
    state.status = ExecutionStatus.RUNNING
    state.input = payload.input
    state.limits = dict(payload.limits) if payload.limits is not None else None
    state.faults = dict(payload.faults) if payload.faults is not None else None
    state.started_at = event.timestamp
    if payload.deadline_at is not None:
        state.deadline_at = datetime.fromisoformat(payload.deadline_at)
    state.tags = dict(payload.tags) if payload.tags else {}


def _task_scheduled(state: ExecutionState, event: Event) -> None:
    node = state.node(event.node_id or "")
    node.attempt = event.attempt or node.attempt + 1
    node.input = r.SCHEDULED_INPUT(event.data, event.payload)
    node.retry_due = False
    node.next_retry_at = None
    node.error = None
    # An answer or a timeout belongs to the attempt it came for (an approval may retry).
    node.signal = None
    node.timer_fired = False
    node.given_up = False
    # The kind says what scheduling makes of the node (an approval waits for a signal, a
    # map runs in the orchestrator while its items do); a kind this engine does not know
    # (a history from another version) is taken as a worker's.
    kind = get_kind(r.SCHEDULED_TYPE(event.data, event.payload))
    node.status = kind.scheduled_status if kind is not None else TaskStatus.SCHEDULED
    if node.status != TaskStatus.SCHEDULED and node.started_at is None:
        node.started_at = event.timestamp


def _task_started(state: ExecutionState, event: Event) -> None:
    node = _current(state, event)
    if node is None or node.status != TaskStatus.SCHEDULED:
        return
    node.status = TaskStatus.RUNNING
    node.started_attempts.append(event.attempt or node.attempt)
    if node.started_at is None:
        node.started_at = event.timestamp


def _settle(state: ExecutionState, event: Event, status: TaskStatus) -> NodeState | None:
    """A result for the node's current attempt: its status and end time. None: stale."""
    node = _current(state, event)
    if node is not None:
        node.status = status
        node.ended_at = event.timestamp
    return node


def _task_completed(state: ExecutionState, event: Event) -> None:
    node = _settle(state, event, TaskStatus.SUCCEEDED)
    if node is not None:
        node.output = r.COMPLETED_OUTPUT(event.data, event.payload)
        node.error = None
        node.completed_seq = event.seq


def _failed(default: ErrorRecord) -> Callable[[ExecutionState, Event], None]:
    """task_failed and task_timed_out: both fail the attempt, the policy decides what next."""

    def handler(state: ExecutionState, event: Event) -> None:
        node = _settle(state, event, TaskStatus.FAILED)
        if node is not None:
            node.error = r.failure_json(event.data, event.payload, default)

    return handler


def _task_retry_scheduled(state: ExecutionState, event: Event) -> None:
    node = state.node(event.node_id or "")
    node.status = TaskStatus.RETRYING
    node.retry_count += 1
    due = r.RETRY_DUE_AT(event.data, event.payload)
    node.next_retry_at = datetime.fromisoformat(due) if isinstance(due, str) else due
    node.retry_due = False


def _task_parked(state: ExecutionState, event: Event) -> None:
    node = _current(state, event)
    if node is not None and node.status == TaskStatus.FAILED:
        node.status = TaskStatus.PARKED


def _task_unparked(state: ExecutionState, event: Event) -> None:
    node = state.node(event.node_id or "")
    if node.status != TaskStatus.PARKED:
        return  # the service refuses it; a fold stays total anyway
    if p.decode(p.TaskUnparked, event.data, event.payload).action == "retry":
        # Another round: the policy's budget counts from here, the first attempt at once.
        node.attempt_base = node.attempt
        node.retry_count = 0
        node.status = TaskStatus.RETRYING
        node.next_retry_at = None
        node.retry_due = True
    else:
        node.status = TaskStatus.FAILED
        node.given_up = True


def _task_skipped(state: ExecutionState, event: Event) -> None:
    node = state.node(event.node_id or "")
    node.status = TaskStatus.SKIPPED
    node.reason = r.REASON(event.data, event.payload)
    node.ended_at = event.timestamp


def _task_cancelled(state: ExecutionState, event: Event) -> None:
    node = _settle(state, event, TaskStatus.CANCELLED)
    if node is not None:
        node.reason = r.REASON(event.data, event.payload)


def _timer_started(state: ExecutionState, event: Event) -> None:
    node = state.node(event.node_id or "")
    node.attempt = event.attempt or 1
    node.status = TaskStatus.WAITING
    node.input = r.TIMER_INPUT(event.data, event.payload)
    node.timer_fired = False
    if node.started_at is None:
        node.started_at = event.timestamp


def _timer_fired(state: ExecutionState, event: Event) -> None:
    kind = r.TIMER_KIND(event.data, event.payload)
    if kind == DEADLINE:
        if event.node_id is None and state.status not in EXECUTION_TERMINAL:
            state.deadline_passed = True
        return
    node = state.node(event.node_id or "")
    if kind == "retry":
        if node.status == TaskStatus.RETRYING and event.attempt == node.attempt + 1:
            node.retry_due = True
    elif node.status == TaskStatus.WAITING and event.attempt == node.attempt:
        node.timer_fired = True


def _retry_requested(state: ExecutionState, event: Event) -> None:
    state.status = ExecutionStatus.RUNNING
    state.ended_at = None
    state.output = None
    state.error = None
    state.cancel_requested = False
    state.paused = False
    # An operator's retry after an engine error is a fresh try (the cause may be fixed),
    # and so is one after a timeout: its deadline has passed and is not set again, so the
    # retried execution has none (nor do the children it starts: they inherit it). One
    # still ahead stays: kernel/effects.py reopens its timer.
    deadline = state.deadline_at
    if deadline is not None and (state.timed_out or event.timestamp >= deadline):
        state.deadline_at = None
    state.engine_error = None
    state.deadline_passed = False
    state.timed_out = False
    for node_id in p.decode(p.RetryRequested, event.data, event.payload).nodes:
        node = state.node(node_id)
        node.attempt_base = node.attempt
        node.retry_count = 0
        node.status = TaskStatus.PENDING
        node.error = None
        node.output = None
        node.reason = None
        node.ended_at = None
        node.signal = None
        node.timer_fired = False


def _cancel_requested(state: ExecutionState, event: Event) -> None:
    state.cancel_requested = True
    state.paused = False  # a cancel goes through a pause: it only stops work
    state.status = ExecutionStatus.CANCELLING


def _timed_out(state: ExecutionState, event: Event) -> None:
    state.timed_out = True


def _paused(state: ExecutionState, event: Event) -> None:
    # The service refuses a pause but of a running execution; a fold stays total anyway.
    if state.status == ExecutionStatus.RUNNING:
        state.paused = True
        state.status = ExecutionStatus.PAUSED


def _resumed(state: ExecutionState, event: Event) -> None:
    if state.paused:
        state.paused = False
        state.status = ExecutionStatus.RUNNING


def _engine_error(state: ExecutionState, event: Event) -> None:
    if state.status not in EXECUTION_TERMINAL and state.engine_error is None:
        error = p.decode(p.EngineErrorFact, event.data, event.payload).error
        state.engine_error = (error or ErrorRecord("EngineError", "?")).to_json()


def _ended(
    status: ExecutionStatus, kind: type[p.WorkflowCompleted | p.WorkflowFailed | p.Reason]
) -> Callable[[ExecutionState, Event], None]:
    def handler(state: ExecutionState, event: Event) -> None:
        payload = p.decode(kind, event.data, event.payload)
        state.status = status
        state.ended_at = event.timestamp
        state.output = payload.output if isinstance(payload, p.WorkflowCompleted) else None
        error = payload.error if isinstance(payload, p.WorkflowFailed) else None
        state.error = error.to_json() if error is not None else None

    return handler


_HANDLERS: dict[str, Callable[[ExecutionState, Event], None]] = {
    EventType.WORKFLOW_STARTED: _workflow_started,
    EventType.TASK_SCHEDULED: _task_scheduled,
    EventType.TASK_STARTED: _task_started,
    EventType.TASK_COMPLETED: _task_completed,
    EventType.TASK_FAILED: _failed(ErrorRecord("Error", "failed")),
    EventType.TASK_TIMED_OUT: _failed(ErrorRecord("Timeout", "attempt timed out", True)),
    EventType.TASK_RETRY_SCHEDULED: _task_retry_scheduled,
    EventType.TASK_SKIPPED: _task_skipped,
    EventType.TASK_PARKED: _task_parked,
    EventType.TASK_UNPARKED: _task_unparked,
    EventType.TASK_CANCELLED: _task_cancelled,
    EventType.TIMER_STARTED: _timer_started,
    EventType.TIMER_FIRED: _timer_fired,
    EventType.SIGNAL_RECEIVED: waits.signal_received,
    EventType.RETRY_REQUESTED: _retry_requested,
    EventType.WORKFLOW_CANCEL_REQUESTED: _cancel_requested,
    EventType.WORKFLOW_TIMED_OUT: _timed_out,
    EventType.WORKFLOW_PAUSED: _paused,
    EventType.WORKFLOW_RESUMED: _resumed,
    EventType.ENGINE_ERROR: _engine_error,
    EventType.WORKFLOW_COMPLETED: _ended(ExecutionStatus.SUCCEEDED, p.WorkflowCompleted),
    EventType.WORKFLOW_FAILED: _ended(ExecutionStatus.FAILED, p.WorkflowFailed),
    EventType.WORKFLOW_CANCELLED: _ended(ExecutionStatus.CANCELLED, p.Reason),
}
