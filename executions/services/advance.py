"""The one orchestration path: lock, fold, decide, append, project, publish on commit."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from executions import messages, store
from executions.definitions import definition_for
from executions.engine.containment import engine_failure
from executions.engine.decide import decide
from executions.engine.events import Decision, EventType, Source
from executions.engine.nodes import WORKER_TYPES
from executions.engine.state import ExecutionState
from executions.engine.statuses import EXECUTION_TERMINAL
from executions.models import Attempt, AttemptStatus, Event, Execution, Timer, TimerKind
from executions.projections import project
from workflows.dsl import Definition

_ENDINGS = frozenset(
    {EventType.WORKFLOW_COMPLETED, EventType.WORKFLOW_FAILED, EventType.WORKFLOW_CANCELLED}
)


def execution_advance(*, execution_id: object) -> int:
    """Decide upon every event not yet decided. Returns the number of decisions."""
    with transaction.atomic():
        execution = store.lock_execution(execution_id)
        return advance_locked(execution, store.load_state(execution), touched=())


def record_and_advance(
    execution: Execution,
    facts: Sequence[Decision],
    *,
    source: Source,
    state: ExecutionState | None = None,
) -> ExecutionState:
    """Append facts (results, timer firings, signals), then decide upon them. Inside the lock."""
    state = state or store.load_state(execution)
    rows = store.append(execution, state, facts, source=source, insert=False)
    for fact in facts:
        if fact.type == EventType.TASK_TIMED_OUT and fact.node_id:
            # A `workflow` node's attempt gave up on its child: the child must not run on.
            cancel_children(execution, fact.node_id, messages.Outbox(), attempt=fact.attempt)
    advance_locked(execution, state, touched=store.touched_nodes(facts), pending=rows)
    return state


def advance_locked(
    execution: Execution,
    state: ExecutionState,
    *,
    touched: Sequence[str] | set[str],
    pending: Sequence[Event] = (),
) -> int:
    """Decide and append. `pending`: fact rows not inserted yet, inserted with the decisions
    in one statement."""
    definition, decisions = _decide(execution, state)
    return commit_decisions(
        execution, state, decisions, touched=touched, pending=pending, definition=definition
    )


def _decide(
    execution: Execution, state: ExecutionState
) -> tuple[Definition | None, list[Decision]]:
    """decide(), without loading the definition where decide does not read it: an ended
    execution (a late timeout) and one being ended for an engine error (whose definition
    may be what broke) must not depend on it still parsing."""
    if state.status in EXECUTION_TERMINAL:
        return None, []
    if state.engine_error is not None:
        return None, engine_failure(state)
    definition = definition_for(execution.version_id)
    return definition, decide(definition, state)


def commit_decisions(
    execution: Execution,
    state: ExecutionState,
    decisions: Sequence[Decision],
    *,
    touched: Sequence[str] | set[str],
    pending: Sequence[Event] = (),
    definition: Definition | None = None,
) -> int:
    """Append `decisions` (taken on `state`), apply their effects, project. Inside the lock."""
    now = timezone.now()
    rows = store.append(execution, state, decisions, source=Source.ENGINE, now=now, insert=False)
    if pending or rows:
        Event.objects.bulk_create([*pending, *rows])
    outbox = messages.Outbox()
    _schedule_attempts(execution, decisions, now, outbox)
    for decision in decisions:
        _apply_effect(execution, decision, now, outbox)
    execution.decided_seq = execution.last_seq
    store.maybe_snapshot(execution, state)
    project(execution, state, {*touched, *store.touched_nodes(decisions)}, definition)
    return len(decisions)


def _schedule_attempts(
    execution: Execution, decisions: Sequence[Decision], now: datetime, outbox: messages.Outbox
) -> None:
    """One INSERT for every attempt a decision scheduled (a fan-out schedules hundreds)."""
    rows = [
        Attempt(
            execution=execution,
            node_id=d.node_id,
            attempt=d.attempt,
            scheduled_at=now,
            published_at=now,
        )
        for d in decisions
        if d.type == EventType.TASK_SCHEDULED and d.data.get("type") in WORKER_TYPES
    ]
    if rows:
        Attempt.objects.bulk_create(rows, batch_size=500)
        ids = [row.pk for row in rows]
        outbox.add(lambda: [messages.publish_attempt(attempt_id) for attempt_id in ids])


def _apply_effect(
    execution: Execution, decision: Decision, now: datetime, outbox: messages.Outbox
) -> None:
    kind = decision.type
    if kind == EventType.TIMER_STARTED:
        due = datetime.fromisoformat(decision.data["input"]["due_at"])
        _start_timer(execution, decision.node_id, decision.attempt, TimerKind.DELAY, due, outbox)
    elif kind == EventType.TASK_RETRY_SCHEDULED:
        due = datetime.fromisoformat(decision.data["due_at"])
        attempt = decision.data["next_attempt"]
        _start_timer(execution, decision.node_id, attempt, TimerKind.RETRY, due, outbox)
    elif kind == EventType.TASK_CANCELLED:
        # A worker running this attempt finds its lease renewal refused and stops.
        Attempt.objects.filter(
            execution=execution,
            node_id=decision.node_id,
            status__in=[AttemptStatus.SCHEDULED, AttemptStatus.RUNNING],
        ).update(status=AttemptStatus.CANCELLED, finished_at=now)
        Timer.objects.filter(
            execution=execution, node_id=decision.node_id, fired_at__isnull=True
        ).update(fired_at=now)
        cancel_children(execution, decision.node_id or "", outbox)
    elif kind in _ENDINGS and execution.parent_execution_id is not None:
        outbox.add(lambda: messages.publish_parent_notify(str(execution.pk)))


def _start_timer(
    execution: Execution,
    node_id: str | None,
    attempt: int | None,
    kind: TimerKind,
    due: datetime,
    outbox: messages.Outbox,
) -> None:
    timer = Timer.objects.create(
        execution=execution, node_id=node_id or "", attempt=attempt or 0, kind=kind, due_at=due
    )
    delay = (due - timezone.now()).total_seconds()
    outbox.add(lambda: messages.publish_timer(timer.pk, delay))


def cancel_children(
    execution: Execution, node_id: str, outbox: messages.Outbox, attempt: int | None = None
) -> None:
    """A cancelled (or, with `attempt`, timed-out) `workflow` node cancels its running child."""
    running = Execution.objects.filter(parent_execution=execution, parent_node_id=node_id)
    if attempt is not None:
        running = running.filter(parent_attempt=attempt)
    running = running.exclude(status__in=EXECUTION_TERMINAL)
    for child_id in running.values_list("pk", flat=True):
        outbox.add(lambda child_id=child_id: messages.publish_cancel(str(child_id)))
