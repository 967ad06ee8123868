"""decide(definition, state) -> decisions: what the orchestrator does next.

A pure function of the definition and the folded events. Each decision is folded into
a working copy before the next is taken, so one call reaches a fixpoint (a skip that
makes a child ready is decided in the same call).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from executions.engine import compensation, maps, waits
from executions.engine.containment import engine_failure
from executions.engine.context import template_context
from executions.engine.errors import ErrorRecord, record_of
from executions.engine.events import Decision, EventType
from executions.engine.faults import with_faults
from executions.engine.fold import apply_event
from executions.engine.nodes import start_node
from executions.engine.payloads import (
    Reason,
    TaskParked,
    TaskRetryScheduled,
    TaskScheduled,
    WorkflowCompleted,
    WorkflowFailed,
    WorkflowTimedOut,
    decided,
)
from executions.engine.readers import SCHEDULED_TYPE
from executions.engine.retry import parks, retry_delay, should_retry
from executions.engine.rules import (
    RUNS_AFTER_FAILURE,
    Verdict,
    failed_for_good,
    is_settled,
    trigger_verdict,
)
from executions.engine.state import ExecutionState, NodeState
from executions.engine.statuses import EXECUTION_TERMINAL, ExecutionStatus, TaskStatus
from executions.engine.timeutil import plus_seconds
from workflows.dsl import Definition, Node
from workflows.dsl.bounded import close_step, open_step
from workflows.dsl.limits import enter_recorded, exit_recorded
from workflows.dsl.templates import TemplateError, render
from workflows.kinds import get_kind


class DecideLoopError(RuntimeError):
    """decide did not reach a fixpoint: a bug in the core, never a user error."""


#: Events decide never emits: their fold handlers mutate node state in place
#: (started_attempts) or touch nodes other than event.node_id, so a fork cannot take them.
_NOT_DECIDED = frozenset(
    {EventType.TASK_STARTED, EventType.RETRY_REQUESTED, EventType.TASK_UNPARKED}
)


def decide(definition: Definition, state: ExecutionState) -> list[Decision]:
    if state.engine_error is not None and state.status not in EXECUTION_TERMINAL:
        # Before anything reads the definition or renders a template: whatever broke
        # handling this execution cannot break the step that ends it.
        return engine_failure(state)
    # One budget for every expression this call evaluates (WORKFLOW_MAX_STEP_WORK): a
    # thousand first nodes cannot make POST /executions do a thousand budgets' worth.
    # The bounds this execution recorded when it started (a setting changed since must not
    # change what is decided for it, nor make --verify disagree with its log).
    # Tokens, not `with` blocks: two generator context managers per call cost more than
    # a small decide itself (decide runs once per fact, and per run in --verify).
    bounds = enter_recorded(state.limits) if state.limits else None
    step = open_step()
    try:
        return _fixpoint(definition, state)
    finally:
        close_step(step)
        if bounds is not None:
            exit_recorded(bounds)


def _fixpoint(definition: Definition, state: ExecutionState) -> list[Decision]:
    # Copy-on-write: a deep copy of the whole state cost O(nodes + history) per call
    # (started_attempts grows with every attempt); a fork copies only what it folds into.
    # The first step reads `state` itself (a step only reads); the fork is made when a
    # step's decisions must be folded for the next one, which most calls never need.
    working = state
    owned: set[str] | None = None
    decisions: list[Decision] = []
    for _ in range(4 * len(definition.nodes) + 16):
        step = with_faults(list(_step(definition, working)), working)
        if not step:
            return decisions
        for decision in step:
            if decision.type in _NOT_DECIDED:
                raise DecideLoopError(f"decide may not emit {decision.type}")
        now = state.now  # the fold of a decision keeps it: its event is stamped `now`
        if now is None:  # decide only decides after workflow_started
            raise DecideLoopError("a decision before any event")
        decisions.extend(step)
        if all(_settles_nothing(decision) for decision in step):
            return decisions  # nothing in this step can make another decision possible
        if owned is None:
            working, owned = state.fork(), set()
        for decision in step:
            if decision.node_id and decision.node_id not in owned:
                working.own(decision.node_id)
                owned.add(decision.node_id)
            apply_event(working, decision.as_event(working.last_seq + 1, now, typed=True))
    raise DecideLoopError(f"no fixpoint after {len(decisions)} decisions")


def _settles_nothing(decision: Decision) -> bool:
    """True for decisions after which the next step is sure to find nothing new: they only
    start waiting (for a worker, a timer) and settle no node. A kind that `schedules_more`
    (a map: its items start in the next step) does not qualify."""
    if decision.type in (EventType.TIMER_STARTED, EventType.TASK_RETRY_SCHEDULED):
        return True
    if decision.type != EventType.TASK_SCHEDULED:
        return False
    kind = get_kind(SCHEDULED_TYPE(decision.data, decision.payload))
    return kind is None or not kind.schedules_more


def _step(definition: Definition, state: ExecutionState) -> Iterator[Decision]:
    if state.status in EXECUTION_TERMINAL or state.status == ExecutionStatus.PENDING:
        return
    if state.cancel_requested:
        yield from _cancel(definition, state)
        return
    if state.deadline_passed:
        yield from _time_out(definition, state)
        return
    if state.paused:
        return  # facts (results, timers, signals) are folded; acting on them waits for resume
    yield from _attend(definition, state)
    yield from _ready(definition, state)


def _stop_nodes(
    definition: Definition, state: ExecutionState, reason: str, *, saga: bool
) -> Iterator[Decision]:
    """Cancel every node that may still run (`saga`: but the compensations, which the
    ending waits for)."""
    for node in maps.all_nodes(definition, state):
        if saga and compensation.is_task(node.id):
            continue
        current = state.peek(node.id)
        if current.status in (TaskStatus.PENDING, TaskStatus.FAILED, TaskStatus.PARKED, *_ACTIVE):
            if current.status == TaskStatus.FAILED and failed_for_good(node, current):
                continue
            attempt = current.attempt if current.status in _ACTIVE else None
            if current.status == TaskStatus.RETRYING:
                # Its attempt already has its result (the failure): cancel the next one.
                attempt = current.attempt + 1
            yield decided(EventType.TASK_CANCELLED, Reason(reason=reason), node.id, attempt)


def _compensate(definition: Definition, state: ExecutionState) -> tuple[list[Decision], bool]:
    """The saga's next decisions (retries and wake-ups of compensations first), and
    whether every compensation has settled."""
    undo = list(_attend(definition, state, compensation.tasks(definition, state)))
    if undo:
        return undo, False
    context = template_context(state)
    return compensation.next_step(definition, state, context, state.now)


#: Why the nodes of an execution that ran past its deadline were cancelled.
TIMED_OUT = "workflow timed out"


def _time_out(definition: Definition, state: ExecutionState) -> Iterator[Decision]:
    if not state.timed_out:
        deadline = state.deadline_at.isoformat() if state.deadline_at else None
        record = WorkflowTimedOut(deadline_at=deadline, timeout_seconds=definition.timeout_seconds)
        yield decided(EventType.WORKFLOW_TIMED_OUT, record)
        return
    stopped = list(_stop_nodes(definition, state, TIMED_OUT, saga=True))
    if stopped:
        yield from stopped
        return
    undo, settled = _compensate(definition, state)
    yield from undo
    if settled:
        yield _timeout_failure(definition, state)


def _timeout_failure(definition: Definition, state: ExecutionState) -> Decision:
    deadline = state.deadline_at.isoformat() if state.deadline_at else None
    seconds = definition.timeout_seconds
    cancelled = [
        node_id
        for node_id, node in state.nodes.items()
        if node.status == TaskStatus.CANCELLED and node.reason == TIMED_OUT
    ]
    details: dict[str, object] = {"deadline_at": deadline, "cancelled": cancelled}
    if seconds is not None:
        details["timeout_seconds"] = seconds
    undone = compensation.summary(definition, state)
    if undone:
        details["compensations"] = undone
    message = f"the execution was still running at its deadline {deadline}"
    error = ErrorRecord("WorkflowTimeout", message, retryable=False, details=details)
    return decided(EventType.WORKFLOW_FAILED, WorkflowFailed(error=error))


def _cancel(definition: Definition, state: ExecutionState) -> Iterator[Decision]:
    saga = definition.compensate_on_cancel
    cancelled = list(_stop_nodes(definition, state, "execution cancelled", saga=saga))
    if cancelled:
        yield from cancelled
        return
    if saga:
        undo, settled = _compensate(definition, state)
        if settled:
            reason = Reason(reason="cancel requested; compensated")
            yield decided(EventType.WORKFLOW_CANCELLED, reason)
        yield from undo
        return
    yield decided(EventType.WORKFLOW_CANCELLED, Reason(reason="cancel requested"))


_ACTIVE = (TaskStatus.SCHEDULED, TaskStatus.RUNNING, TaskStatus.RETRYING, TaskStatus.WAITING)


#: Statuses that never need the orchestrator's attention outside _ready.
_QUIET = frozenset(
    {
        TaskStatus.PENDING,
        TaskStatus.SCHEDULED,
        TaskStatus.RUNNING,
        TaskStatus.SUCCEEDED,
        TaskStatus.SKIPPED,
        TaskStatus.CANCELLED,
        TaskStatus.PARKED,
    }
)


def _attend(
    definition: Definition, state: ExecutionState, only: Iterable[Node] | None = None
) -> Iterator[Decision]:
    """One pass over started nodes (or `only` these): failures to retry, retry timers that
    fired, delay timers that fired, approvals that were answered."""
    nodes = state.nodes
    taken: dict[str, int] = {}  # kept signals this pass delivered, by name
    for node in maps.all_nodes(definition, state) if only is None else only:
        current = nodes.get(node.id)
        if current is None or current.status in _QUIET:
            continue
        if current.status == TaskStatus.FAILED:
            yield from _retry(node, current, state)
        elif current.status == TaskStatus.RETRYING and current.retry_due:
            deadline = waits.deadline(node, state.now)
            again = TaskScheduled(
                input=current.input, type=node.type, retry=True, timeout_at=deadline
            )
            yield decided(EventType.TASK_SCHEDULED, again, node.id, current.attempt + 1)
        elif current.status == TaskStatus.WAITING:
            yield from waits.attend(node, current, state, taken)


def _retry(node: Node, current: NodeState, state: ExecutionState) -> Iterator[Decision]:
    policy = node.retry_policy
    error = record_of(current.error)
    if not should_retry(policy, attempt=current.tries, error=error):
        if parks(policy, attempt=current.tries, error=error, given_up=current.given_up):
            parked = TaskParked(
                attempts=current.tries, error_type=error.type if error is not None else None
            )
            yield decided(EventType.TASK_PARKED, parked, node.id, current.attempt)
        return
    delay = retry_delay(
        policy,
        execution_id=state.execution_id,
        node_id=node.id,
        attempt=current.attempt,
        tries=current.tries,
        error=error,
    )
    retry = TaskRetryScheduled(
        delay_seconds=delay,
        due_at=plus_seconds(state.now, delay).isoformat(),
        next_attempt=current.attempt + 1,
        error_type=error.type if error is not None else None,
    )
    yield decided(EventType.TASK_RETRY_SCHEDULED, retry, node.id, current.attempt)


def _ready(definition: Definition, state: ExecutionState) -> Iterator[Decision]:
    nodes = state.nodes
    failing = None
    context = None
    for node in definition.nodes:
        current = nodes.get(node.id)
        if current is not None and current.status != TaskStatus.PENDING:
            continue
        verdict = trigger_verdict(definition, state, node)
        if verdict is Verdict.WAIT:
            continue
        attempt = current.attempt if current is not None else 0
        if verdict is Verdict.SKIP:
            yield _skip(node.id, "upstream did not succeed", attempt)
            continue
        if failing is None:
            failing = _failing(definition, state)
        if failing and node.trigger_rule not in RUNS_AFTER_FAILURE:
            yield _skip(node.id, "execution is failing", attempt)
            continue
        # Templates may only read upstream nodes, which are settled: one context serves
        # every node started in this step.
        context = context or template_context(state)
        yield from start_node(node, attempt + 1, context, state.now)
    if maps.has_maps(definition):
        context = context or template_context(state)
        yield from maps.progress(definition, state, context, state.now)
    if not _busy(definition, state):
        if failing is None:
            failing = _failing(definition, state)
        if failing:
            context = context or template_context(state)
            undo, settled = compensation.next_step(definition, state, context, state.now)
            if not settled:
                yield from undo
                return
        yield _finish(definition, state, failing)


def _skip(node_id: str, reason: str, attempt: int) -> Decision:
    return decided(EventType.TASK_SKIPPED, Reason(reason=reason), node_id, attempt or None)


def _failing(definition: Definition, state: ExecutionState) -> bool:
    nodes = state.nodes
    return any(
        nodes[n.id].status == TaskStatus.FAILED and failed_for_good(n, nodes[n.id])
        for n in definition.nodes
        if n.id in nodes
    )


def _busy(definition: Definition, state: ExecutionState) -> bool:
    """Some node may still produce an event. Sinks settle last, so look from the end."""
    nodes = state.nodes
    for node in reversed(definition.nodes):
        current = nodes.get(node.id)
        if current is None or not is_settled(node, current):
            return True
    return False


def _finish(definition: Definition, state: ExecutionState, failing: bool) -> Decision:
    if failing:
        failed = [n.id for n in definition.nodes if failed_for_good(n, state.peek(n.id))]
        details = {"nodes": failed, "cause": state.peek(failed[0]).error}
        undone = compensation.summary(definition, state)
        if undone:
            details["compensations"] = undone
        error = ErrorRecord(message=f"node '{failed[0]}' failed", details=details)
        return decided(EventType.WORKFLOW_FAILED, WorkflowFailed(error=error))
    context = template_context(state)
    try:
        if definition.output is None:
            output = {sink: state.peek(sink).output for sink in definition.sinks}
        else:
            output = render(definition.output, context)
    except TemplateError as exc:
        error = ErrorRecord("TemplateError", f"output: {exc}")
        return decided(EventType.WORKFLOW_FAILED, WorkflowFailed(error=error))
    return decided(EventType.WORKFLOW_COMPLETED, WorkflowCompleted(output=output))
