"""The one orchestration path: lock, fold, decide, and one unit of work (kernel/unit.py
UnitOfWork) that appends, projects and publishes on commit."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any
from uuid import UUID

from django.db import transaction

from executions.definitions import definition_for
from executions.engine.events import Decision, EventType, Source
from executions.engine.payloads import WorkflowStarted, decided
from executions.engine.state import ExecutionState
from executions.kernel.handle import Locked
from executions.kernel.lock import lock_execution, looking_after
from executions.kernel.log import load_state
from executions.kernel.unit import UnitOfWork
from executions.models import Execution, Timer, TimerKind
from workflows import clock
from workflows.dsl.limits import decision_limits


def execution_advance(*, execution_id: UUID | str) -> int:
    """Decide upon every event not yet decided. Returns the number of decisions."""
    with looking_after(), transaction.atomic():
        locked = lock_execution(execution_id)
        work = UnitOfWork(locked, load_state(locked.execution))
        decided = work.decide()
        work.commit(decided=True)
        return decided


def record_and_advance(
    locked: Locked,
    facts: Sequence[Decision],
    *,
    source: Source,
    state: ExecutionState | None = None,
) -> ExecutionState:
    """Append facts (results, timer firings, signals), then decide upon them. Inside the lock."""
    work = record_and_decide(locked, facts, source=source, state=state)
    work.commit(decided=True)
    return work.state


def record_and_decide(
    locked: Locked,
    facts: Sequence[Decision],
    *,
    source: Source,
    state: ExecutionState | None = None,
) -> UnitOfWork:
    """record_and_advance, short of the commit: the caller may add to the same unit (a
    worker claiming the attempt its result scheduled) and then commits it, decided."""
    work = UnitOfWork(locked, state or load_state(locked.execution))
    work.append(facts, source=source)
    work.decide()
    return work


def _deadline(execution: Execution) -> str | None:
    """When the execution times out: its definition's timeout_seconds from now, or its
    parent's deadline if that comes first (a child never outlives its parent's budget)."""
    seconds = definition_for(execution.version_id).timeout_seconds
    own = clock.now() + timedelta(seconds=seconds) if seconds is not None else None
    parent = execution.parent_execution if execution.parent_execution_id else None
    inherited = parent.deadline_at if parent is not None else None
    if inherited is not None and not _deadline_open(parent):
        # A parent retried after its deadline fired (or after it ended before it, which
        # closed the timer) runs on with no deadline: its child must not inherit it.
        inherited = None
    found = [moment for moment in (own, inherited) if moment is not None]
    return min(found).isoformat() if found else None


def _deadline_open(execution: Execution | None) -> bool:
    return Timer.objects.filter(
        execution=execution, kind=TimerKind.DEADLINE, fired_at__isnull=True
    ).exists()


def begin(locked: Locked, reuse: list[Decision] | None = None, *, faults: Any = None) -> None:
    """Append workflow_started (and a replay's reused results), then decide. Inside the lock."""
    execution = locked.execution
    payload = WorkflowStarted(
        input=execution.input,
        workflow=execution.workflow.name,
        version=execution.version.version,
        replay_of=str(execution.replay_of_id) if execution.replay_of_id else None,
        by=execution.created_by,
        # The bounds decide reads, as they are now: in force for this execution from
        # here on, whatever the settings say later (workflows/dsl/limits.py).
        limits=decision_limits(),
        faults=faults or None,
        deadline_at=_deadline(execution),
        tags=execution.tags or None,
    )
    started = decided(EventType.WORKFLOW_STARTED, payload)
    record_and_advance(locked, [started, *(reuse or [])], source=Source.API)
