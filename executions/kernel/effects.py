"""What an appended event does beside the log: attempt and timer rows, and the messages
that wake whoever acts on them (sent once the transaction commits, through an Outbox).

Called by the unit of work (kernel/unit.py) for every event it appends, facts and
decisions alike, inside the execution's lock (kernel/lock.py: Execution, then its rows).
The timer rules (which event starts a timer, which closes one) are written here once:
integrity.expected_timers checks the rows by them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from functools import partial
from typing import Any, cast

from django.db.models import F

from executions import messages, signals
from executions.definitions import definition_for
from executions.engine.events import Decision, Event, EventType
from executions.engine.faults import DUPLICATE_DELIVERY
from executions.engine.nodes import WORKER_TYPES
from executions.engine.payloads import (
    FaultInjected,
    TaskRetryScheduled,
    TaskScheduled,
    WorkflowStarted,
)
from executions.engine.readers import (
    RETRY_DUE_AT,
    SCHEDULED_INPUT,
    SCHEDULED_TYPE,
    TIMER_INPUT,
    reader,
)
from executions.engine.statuses import EXECUTION_TERMINAL, ExecutionStatus
from executions.kernel.writes import ROWS_IN_ONE, Writes, insert_rows
from executions.models import Attempt, AttemptStatus, Execution, Timer, TimerKind
from nodes.secrets import secret_names, template_of
from workflows import clock
from workflows.dsl import Node
from workflows.kinds import get_kind

#: The events that end an execution, and the status each ends it with.
_ENDINGS = {
    EventType.WORKFLOW_COMPLETED: ExecutionStatus.SUCCEEDED.value,
    EventType.WORKFLOW_FAILED: ExecutionStatus.FAILED.value,
    EventType.WORKFLOW_CANCELLED: ExecutionStatus.CANCELLED.value,
}


class Hold(Enum):
    """Which of the attempts a unit schedules (without a pool) are held back."""

    #: None: the execution is within its in-flight cap, each is published at once.
    NONE = "none"
    #: The first: its worker's eager dispatch claims it in the same unit, no message.
    FIRST = "first"
    #: All: the execution is past its cap; the commit's top-up publishes what fits.
    ALL = "all"


@dataclass
class Held:
    """What a unit's effects left held (executions/kernel/capacity.py): attempts with
    no pool, for the in-flight top-up, and the pools whose dispatch must run after commit."""

    capped: int = 0
    pools: set[str] = field(default_factory=set)
    #: The attempt held for its worker's eager claim (Hold.FIRST), not inserted: asked for
    #: with `defer_first`, its caller inserts it, claimed or held (counted in `capped`).
    #: Handed to the caller, never merged (UnitOfWork.apply_effects returns it).
    first: Attempt | None = None

    def add(self, other: Held) -> None:
        self.capped += other.capped
        self.pools |= other.pools


def apply_effects(
    execution: Execution,
    events: Sequence[Decision],
    now: datetime,
    outbox: messages.Outbox,
    *,
    hold: Hold = Hold.NONE,
    writes: Writes | None = None,
    defer_first: bool = False,
) -> Held:
    """The rows and messages `events` call for, in the order they were appended.
    `writes`: the attempts' INSERT is staged there when nothing holds any of them (no
    top-up reads them before the writes are sent: kernel/capacity.py) and they are no
    more than writes.ROWS_IN_ONE. `defer_first`: the attempt Hold.FIRST holds is not
    inserted but left in `Held.first`."""
    held = _schedule_attempts(execution, events, now, outbox, hold, writes, defer_first)
    for event in events:
        _apply_effect(execution, event, now, outbox, held)
        if event.type in _ENDINGS:
            outbox.add(partial(signals.send_finished, str(execution.pk), _ENDINGS[event.type]))
        if event.type in _ENDINGS and _has_deadline(execution, events):
            # Nothing left for the deadline to end: the sweeper need not come for it.
            Timer.objects.filter(
                execution=execution, kind=TimerKind.DEADLINE, fired_at__isnull=True
            ).update(fired_at=now)
        if event.type in _ENDINGS and execution.concurrency_key:
            # Its concurrency key has room, or (a held one cancelled) its queue moved: the
            # next held execution, whose version may set a larger limit, may start.
            key = (execution.workflow_id, execution.concurrency_key)
            outbox.add(partial(messages.publish_admit, *key))
    return held


def _has_deadline(execution: Execution, events: Sequence[Decision]) -> bool:
    """The execution has a deadline timer (set when it started, perhaps in this unit,
    before its projection is saved)."""
    if execution.deadline_at is not None:
        return True
    return any(
        _DEADLINE_AT(e.data, e.payload) for e in events if e.type == EventType.WORKFLOW_STARTED
    )


def _schedule_attempts(
    execution: Execution,
    events: Sequence[Decision],
    now: datetime,
    outbox: messages.Outbox,
    hold: Hold,
    writes: Writes | None = None,
    defer_first: bool = False,
) -> Held:
    """One INSERT for every attempt a decision scheduled (a fan-out schedules hundreds).
    Those `hold` holds wait for the commit's top-up to the in-flight cap, and a pool's
    for its dispatch after commit (kernel/capacity.py); the others are published. The one
    held for an eager claim is left to the caller with `defer_first`: it inserts it already
    claimed where it may, one statement for both (services/attempts.py)."""
    held = Held()
    scheduled = [d for d in events if schedules_attempt(d)]
    if not scheduled:
        return held
    definition = definition_for(execution.version_id)
    # Fault injection: an attempt hit by duplicate_delivery is published at once, twice
    # (past the cap and its pool's dispatch: the claim gate still holds the slots).
    faulted = {(d.node_id, d.attempt) for d in events if d.type == EventType.FAULT_INJECTED}
    twice = {
        (d.node_id, d.attempt)
        for d in events
        if d.type == EventType.FAULT_INJECTED and _FAULT(d.data, d.payload) == DUPLICATE_DELIVERY
    }
    rows, sends = [], []
    for d in scheduled:
        # A scheduled task always names its node and attempt.
        node_id, attempt = cast(str, d.node_id), cast(int, d.attempt)
        node = definition.node_for(node_id)
        pool = node.pool
        duplicated = (node_id, attempt) in twice
        first = False  # the one Hold.FIRST holds
        if duplicated:
            published = True
        elif pool:
            published = False
            held.pools.add(pool)
        elif node.rate_limit is not None:
            # Its bucket is known only at its claim, which holds it if the bucket is empty.
            published = True
        else:
            published = hold == Hold.NONE or (hold == Hold.FIRST and held.capped > 0)
            held.capped += not published
            first = hold == Hold.FIRST and not published
        row = Attempt(
            execution=execution,
            node_id=node_id,
            attempt=attempt,
            scheduled_at=now,
            published_at=now if published else None,
            released_at=now if published else None,
            pool_id=pool,
            payload=None if (node_id, attempt) in faulted else claim_payload(node, d),
        )
        if first and defer_first:
            held.first = row
            continue
        rows.append(row)
        if published:
            kind = cast(str, SCHEDULED_TYPE(d.data, d.payload))  # a worker's: schedules_attempt
            sends += [(len(rows) - 1, kind)] * (2 if duplicated else 1)
    if writes is not None and hold == Hold.NONE and len(rows) <= ROWS_IN_ONE:
        insert_rows(writes, rows)  # their ids are set once the writes are sent
    elif rows:
        Attempt.objects.bulk_create(rows, batch_size=500)
    if sends:
        workflow_id, priority = execution.workflow_id, execution.priority
        out = [(rows[i], kind) for i, kind in sends]

        def publish() -> None:
            workflow = messages.workflow_name(workflow_id)
            messages.publish_attempts(
                [
                    messages.AttemptMessage(
                        row.pk,
                        messages.attempt_name(workflow, row.node_id, row.attempt),
                        kind,
                        priority,
                    )
                    for row, kind in out
                ]
            )

        outbox.add(publish)
    return held


def claim_payload(node: Node, scheduled: Decision) -> dict[str, Any] | None:
    """What a worker's claim needs when it cannot read the execution's state (its lock
    taken: executions/kernel/inbox.py), or None where only the state will do: a pool's
    gate, a rate limit's (its key is rendered from the state), a child workflow's start,
    and a template with secrets (rendered from the state) are claimed under the lock, as
    are attempts with faults injected (left out by the caller)."""
    kind = get_kind(node.type)
    if node.pool or node.rate_limit or kind is None or kind.starts_child:
        return None
    if secret_names(template_of(node)):
        return None
    return {"input": SCHEDULED_INPUT(scheduled.data, scheduled.payload)}


#: A logged event, or one being appended: what the timer rules read of either.
Logged = Decision | Event

_TIMEOUT_AT = reader(TaskScheduled, "timeout_at")
_NEXT_ATTEMPT = reader(TaskRetryScheduled, "next_attempt")
_FAULT = reader(FaultInjected, "fault")
_DEADLINE_AT = reader(WorkflowStarted, "deadline_at")


def schedules_attempt(event: Logged) -> bool:
    """Whether an event calls for an Attempt row: a task scheduled of a kind a worker runs
    (the one rule for the rows the effects create and those integrity expects)."""
    if event.type != EventType.TASK_SCHEDULED:
        return False
    return SCHEDULED_TYPE(event.data, getattr(event, "payload", None)) in WORKER_TYPES


def timer_started_by(event: Logged) -> tuple[str, int, TimerKind, datetime] | None:
    """The Timer row an event starts, as (node id, attempt, kind, due), or None: the one
    rule for the rows the effects create and those integrity.expected_timers expects."""
    kind, node_id, attempt = event.type, event.node_id or "", event.attempt or 0
    payload = getattr(event, "payload", None)
    if kind == EventType.TIMER_STARTED:
        due = TIMER_INPUT(event.data, payload)["due_at"]
        return node_id, attempt, TimerKind.DELAY, datetime.fromisoformat(due)
    if kind == EventType.TASK_SCHEDULED and _TIMEOUT_AT(event.data, payload):
        due = _TIMEOUT_AT(event.data, payload)
        return node_id, attempt, TimerKind.TIMEOUT, datetime.fromisoformat(due)
    if kind == EventType.WORKFLOW_STARTED and _DEADLINE_AT(event.data, payload):
        due = _DEADLINE_AT(event.data, payload)
        return "", 0, TimerKind.DEADLINE, datetime.fromisoformat(due)
    if kind == EventType.TASK_RETRY_SCHEDULED:
        due, retry = (
            cast(str, RETRY_DUE_AT(event.data, payload)),
            _NEXT_ATTEMPT(event.data, payload),
        )
        return node_id, retry, TimerKind.RETRY, datetime.fromisoformat(due)
    return None


def timeout_closed_by(event: Logged) -> tuple[str, int, TimerKind] | None:
    """The Timer an event closes unfired, as (node id, attempt, kind), or None: the answer
    to a wait (an approval decided, a signal delivered) closes its timeout, which must
    never fire; a late wake-up for it finds it fired and does nothing."""
    if event.type == EventType.SIGNAL_RECEIVED and event.node_id:
        return event.node_id, event.attempt or 0, TimerKind.TIMEOUT
    return None


def _apply_effect(
    execution: Execution, event: Decision, now: datetime, outbox: messages.Outbox, held: Held
) -> None:
    kind = event.type
    started, closed = timer_started_by(event), timeout_closed_by(event)
    if started is not None:
        start_timer(execution, *started, outbox)
    elif closed is not None:
        node_id, attempt, timer = closed
        Timer.objects.filter(
            execution=execution, node_id=node_id, attempt=attempt, kind=timer, fired_at__isnull=True
        ).update(fired_at=now)
    elif kind == EventType.TASK_TIMED_OUT and event.node_id:
        # A `workflow` node's attempt gave up on its child: the child must not run on.
        cancel_children(execution, event.node_id, outbox, attempt=event.attempt)
    elif kind == EventType.TASK_CANCELLED:
        # A worker running this attempt finds its lease renewal refused and stops.
        Attempt.objects.filter(
            execution=execution,
            node_id=event.node_id,
            status__in=[AttemptStatus.SCHEDULED, AttemptStatus.RUNNING],
        ).update(status=AttemptStatus.CANCELLED, finished_at=now)
        # A slot it held (or a place it had in the broker) is free for another.
        pool = _pool_of(execution, event.node_id)
        if pool:
            held.pools.add(pool)
        Timer.objects.filter(
            execution=execution, node_id=event.node_id, fired_at__isnull=True
        ).update(fired_at=now)
        cancel_children(execution, event.node_id or "", outbox)
    elif kind == EventType.RETRY_REQUESTED and _deadline_ahead(execution, now):
        # Its ending closed the deadline timer before it came: the retried execution runs
        # under the same deadline (one that passed, as after a timeout, is not set again).
        ended = Timer.objects.filter(
            execution=execution, kind=TimerKind.DEADLINE, fired_at__lt=F("due_at")
        )
        for timer_id, due in ended.values_list("pk", "due_at"):
            Timer.objects.filter(pk=timer_id).update(fired_at=None)
            delay = (due - clock.now()).total_seconds()
            outbox.add(partial(messages.publish_timer, timer_id, delay))
    elif kind in _ENDINGS and execution.parent_execution_id is not None:
        outbox.add(lambda: messages.publish_parent_notify(str(execution.pk)))
    elif kind in _ENDINGS and (execution.engine_key or "").startswith("schedule:"):
        # A buffered fire of its schedule (overlap buffer_one) may start now.
        schedule_id = (execution.engine_key or "").split(":")[1]
        outbox.add(partial(messages.publish_schedule_release, schedule_id))


def _pool_of(execution: Execution, node_id: str | None) -> str | None:
    """The node's pool, if its definition can say: an execution ended for an engine error
    may be ended because its definition no longer parses (the sweeper's dispatch of held
    attempts then frees the slot instead)."""
    try:
        return definition_for(execution.version_id).node_for(node_id or "").pool
    except Exception:
        return None


def start_timer(
    execution: Execution,
    node_id: str | None,
    attempt: int | None,
    kind: TimerKind,
    due: datetime,
    outbox: messages.Outbox,
) -> None:
    """A durable timer row, and a wake-up message for it once the transaction commits."""
    timer = Timer.objects.create(
        execution=execution, node_id=node_id or "", attempt=attempt or 0, kind=kind, due_at=due
    )
    delay = (due - clock.now()).total_seconds()
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
        outbox.add(partial(messages.publish_cancel, str(child_id)))


def _deadline_ahead(execution: Execution, now: datetime) -> bool:
    """A deadline still to come (its timer, closed before it came due, may be reopened)."""
    return execution.deadline_at is not None and execution.deadline_at > now
