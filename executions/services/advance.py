"""The one orchestration path: lock, fold, decide, and one unit of work (store.UnitOfWork)
that appends, projects and publishes on commit."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from django.db import transaction

from executions import inbox, store
from executions.definitions import definition_for
from executions.engine.containment import engine_failure
from executions.engine.decide import decide
from executions.engine.events import Decision, Source
from executions.engine.state import ExecutionState
from executions.engine.statuses import EXECUTION_TERMINAL
from executions.models import Execution
from workflows.dsl import Definition


def execution_advance(*, execution_id: UUID | str) -> int:
    """Decide upon every event not yet decided. Returns the number of decisions."""
    with transaction.atomic():
        execution = store.lock_execution(execution_id)
        work = store.UnitOfWork(execution, store.load_state(execution))
        decided = decide_into(work)
        work.commit(decided=True)
        return decided


def advance_pending(
    execution_id: UUID | str, *, claims: bool = False, limit: int | None = None
) -> int:
    """Log and decide upon the inbox's results (executions/inbox.py; `claims`: its claims
    too) while there are any, the lock is free and fewer than `limit` units ran. Taken:
    its holder looks at the inbox after its commit. Returns the number of units."""
    units = 0
    while (limit is None or units < limit) and inbox.waiting(str(execution_id), claims=claims):
        with transaction.atomic():
            # This loop is the look after the commit: the lock does not schedule another.
            execution = store.try_lock_execution(execution_id)
            if execution is None:
                return units
            work = store.UnitOfWork(execution, store.load_state(execution), recheck=False)
            if work.pending:  # another holder may have drained it first
                decide_into(work)
                work.commit(decided=True)
        units += 1
    return units


def record_and_advance(
    execution: Execution,
    facts: Sequence[Decision],
    *,
    source: Source,
    state: ExecutionState | None = None,
) -> ExecutionState:
    """Append facts (results, timer firings, signals), then decide upon them. Inside the lock."""
    work = record_and_decide(execution, facts, source=source, state=state)
    work.commit(decided=True)
    return work.state


def record_and_decide(
    execution: Execution,
    facts: Sequence[Decision],
    *,
    source: Source,
    state: ExecutionState | None = None,
) -> store.UnitOfWork:
    """record_and_advance, short of the commit: the caller may add to the same unit (a
    worker claiming the attempt its result scheduled) and then commits it, decided."""
    work = store.UnitOfWork(execution, state or store.load_state(execution))
    work.append(facts, source=source)
    decide_into(work)
    return work


def decide_into(work: store.UnitOfWork) -> int:
    """Decide upon the unit's state and append the decisions. Returns how many."""
    work.definition, decisions = _decide(work.execution, work.state)
    work.append(decisions, source=Source.ENGINE)
    return len(decisions)


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
