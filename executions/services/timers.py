"""Durable timers: a due time in the database, fired once by whoever gets there first."""

from __future__ import annotations

from django.db import transaction

from executions import messages
from executions.engine.events import EventType, Source
from executions.engine.payloads import TimerFired, decided
from executions.engine.statuses import EXECUTION_TERMINAL, ExecutionStatus
from executions.kernel.advance import begin, record_and_advance
from executions.kernel.lock import lock_execution, looking_after
from executions.models import Timer, TimerKind
from executions.services import admission
from workflows import clock


def timer_fire(*, timer_id: int) -> bool:
    """Fire a due timer. False: not due yet, already fired, or gone."""
    with looking_after(), transaction.atomic():
        timer = Timer.objects.filter(pk=timer_id).first()
        if timer is None or timer.fired_at is not None:
            return False
        now = clock.now()
        if timer.due_at > now:
            return False  # an early wake-up: the sweeper or a later message fires it
        locked = lock_execution(timer.execution_id)
        execution = locked.execution
        if execution.status == ExecutionStatus.PAUSED:
            return False  # held: execution_resume sends it again
        if not Timer.objects.filter(pk=timer_id, fired_at__isnull=True).update(fired_at=now):
            return False
        if execution.status in EXECUTION_TERMINAL:
            return False  # it ended meanwhile (an engine error, say): the timer is moot
        if timer.kind == TimerKind.START:
            if execution.concurrency_key:
                # Its key decides when it begins. Admitted after this commits, by a message
                # (or the sweeper): no key lock is taken under this execution's lock.
                admission.hold(execution)
                key = (execution.workflow_id, execution.concurrency_key)
                transaction.on_commit(lambda: messages.publish_admit(*key))
            else:
                begin(locked)
            return True
        payload = TimerFired(kind=timer.kind, due_at=timer.due_at.isoformat())
        if timer.kind == TimerKind.DEADLINE:  # the execution's own: no node, no attempt
            fired = decided(EventType.TIMER_FIRED, payload)
        else:
            fired = decided(EventType.TIMER_FIRED, payload, timer.node_id, timer.attempt)
        record_and_advance(locked, [fired], source=Source.TIMER)
        return True
