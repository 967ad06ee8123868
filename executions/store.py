"""The one writer of events, and the loader of folded state.

Every append happens inside a transaction that holds the execution's lock, so seqs are
contiguous; the unique (execution, seq) constraint is the backstop if that is ever wrong.
Lock order: the Execution row first, then any Attempt/Timer/Task rows of that execution.
Nothing takes two Execution locks in one transaction, so there is no deadlock cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone

from executions.engine.events import Decision, Source
from executions.engine.events import Event as EngineEvent
from executions.engine.fold import apply_event, fold
from executions.engine.state import ExecutionState
from executions.models import Event, Execution

#: Save a new snapshot once this many events have been appended since the last one.
SNAPSHOT_EVERY = 50


def lock_execution(execution_id: object) -> Execution:
    """The execution row, locked until the transaction ends. Call inside atomic()."""
    assert transaction.get_connection().in_atomic_block, "lock_execution needs atomic()"
    queryset = Execution.objects.all()
    if connection.features.has_select_for_update:
        queryset = queryset.select_for_update()
    # On SQLite the IMMEDIATE transaction already holds the database's write lock.
    return queryset.get(pk=execution_id)


def to_engine(row: Event) -> EngineEvent:
    return EngineEvent(
        seq=row.seq,
        type=row.type,
        timestamp=row.timestamp,
        node_id=row.node_id,
        attempt=row.attempt,
        data=row.data,
        source=row.source,
    )


def events_of(execution_id: object, *, after_seq: int = 0, upto_seq: int | None = None):
    rows = Event.objects.filter(execution_id=execution_id, seq__gt=after_seq)
    if upto_seq is not None:
        rows = rows.filter(seq__lte=upto_seq)
    return rows.order_by("seq")


def load_state(execution: Execution) -> ExecutionState:
    """The snapshot plus the events after it: cost grows with new events, not history."""
    if execution.snapshot is not None:
        base = ExecutionState.from_dict(execution.snapshot)
    else:
        base = ExecutionState(str(execution.id))
    tail = events_of(execution.pk, after_seq=base.last_seq, upto_seq=execution.last_seq)
    state = base
    for row in tail.iterator(chunk_size=2000):
        apply_event(state, to_engine(row))
    return state


def state_at(execution_id: object, seq: int | None = None) -> ExecutionState:
    """The state folded from the first `seq` events (all of them when None)."""
    rows = events_of(execution_id, upto_seq=seq)
    return fold(
        (to_engine(r) for r in rows.iterator(chunk_size=2000)), execution_id=str(execution_id)
    )


def append(
    execution: Execution,
    state: ExecutionState,
    decisions: Sequence[Decision],
    *,
    source: Source,
    now: datetime | None = None,
) -> list[Event]:
    """Append events for `decisions`, fold them into `state`, and bump execution.last_seq.

    The caller saves `execution` (the projection step does) before the transaction ends.
    """
    if not decisions:
        return []
    now = now or timezone.now()
    rows = []
    for decision in decisions:
        seq = execution.last_seq + 1
        apply_event(state, decision.as_event(seq, now))
        rows.append(
            Event(
                execution=execution,
                seq=seq,
                type=decision.type,
                node_id=decision.node_id,
                attempt=decision.attempt,
                data=decision.data,
                timestamp=now,
                source=source,
            )
        )
        execution.last_seq = seq
    Event.objects.bulk_create(rows)
    return rows


def maybe_snapshot(execution: Execution, state: ExecutionState) -> None:
    if state.last_seq - execution.snapshot_seq >= SNAPSHOT_EVERY:
        execution.snapshot = state.to_dict()
        execution.snapshot_seq = state.last_seq


def touched_nodes(decisions: Iterable[Decision]) -> set[str]:
    return {d.node_id for d in decisions if d.node_id}
