"""Synthetic event histories of any length, and executions stored with them (COPY)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta


def synth_history(definition, execution_id: str, size: int) -> list:
    """A valid log of `size` events (size % 5 == 0): a node that fails and retries.

    Workers' and timers' facts are written here; every engine event is what decide()
    returns, so `verify` re-derives them all. Ends with task_retry_scheduled.
    """
    from executions.engine.decide import decide
    from executions.engine.events import Event, EventType, Source
    from executions.engine.fold import apply_event
    from executions.engine.state import ExecutionState

    assert size % 5 == 0, size
    assert size >= 5, size
    attempts = size // 5
    state = ExecutionState(execution_id)
    events: list[Event] = []
    clock = [datetime(2026, 1, 1, tzinfo=UTC)]

    def add(kind, node, attempt, data, source, step: float) -> None:
        clock[0] += timedelta(seconds=step)
        event = Event(len(events) + 1, kind, clock[0], node, attempt, data, source)
        apply_event(state, event)
        events.append(event)

    def engine(expected: EventType) -> None:
        decisions = decide(definition, state)
        assert [d.type for d in decisions] == [expected], decisions
        (d,) = decisions
        add(d.type, d.node_id, d.attempt, d.data, Source.ENGINE, 0.001)

    start = {"input": {}, "workflow": "retry-forever", "version": 1, "replay_of": None}
    add(EventType.WORKFLOW_STARTED, None, None, start, Source.API, 0)
    engine(EventType.TASK_SCHEDULED)
    error = {"type": "NodeError", "message": "bench", "retryable": True}
    for k in range(1, attempts + 1):
        add(EventType.TASK_STARTED, "f", k, {"worker": "bench"}, Source.WORKER, 0.01)
        add(EventType.TASK_FAILED, "f", k, {"error": error}, Source.WORKER, 0.01)
        engine(EventType.TASK_RETRY_SCHEDULED)
        if k < attempts:
            due = events[-1].data["due_at"]
            fired = {"kind": "retry", "due_at": due}
            add(EventType.TIMER_FIRED, "f", k + 1, fired, Source.TIMER, 1.0)
            engine(EventType.TASK_SCHEDULED)
    assert len(events) == size, (len(events), size)
    return events


def chained(events: list) -> list[str]:
    """Each event's hash, chained as the UnitOfWork would (executions/engine/chain.py)."""
    from executions.engine.chain import GENESIS, event_hash

    hashes, previous = [], GENESIS
    for e in events:
        previous = event_hash(
            previous, seq=e.seq, type=e.type, node_id=e.node_id, attempt=e.attempt,
            data=e.data, timestamp=e.timestamp,
        )  # fmt: skip
        hashes.append(previous)
    return hashes


def insert_history(version, size: int):
    """An execution whose log is synth_history(size), stored as the store would have it."""
    from django.db import connection, transaction
    from psycopg.types.json import Jsonb

    from executions.definitions import definition_for
    from executions.engine.fold import apply_event, fold
    from executions.engine.state import ExecutionState
    from executions.kernel.projections import create_tasks, project
    from executions.models import Event, Execution

    definition = definition_for(version.pk)
    execution_id = uuid.uuid4()
    events = synth_history(definition, str(execution_id), size)
    state = ExecutionState(str(execution_id))
    for event in events:  # fold in place (fold() would copy)
        apply_event(state, event)
    hashes = chained(events)
    snapshot_seq = size - size % 50
    snapshot = fold(events[:snapshot_seq], execution_id=str(execution_id)) if snapshot_seq else None
    with transaction.atomic():
        execution = Execution.objects.create(
            id=execution_id, workflow_id=version.workflow_id, version=version, input={},
            last_seq=size, decided_seq=size, last_hash=hashes[-1],
            snapshot=snapshot.to_dict() if snapshot else None, snapshot_seq=snapshot_seq,
        )  # fmt: skip
        create_tasks(execution, definition)
        project(execution, state, ["f"])
        table = Event._meta.db_table
        columns = "execution_id, seq, type, node_id, attempt, data, timestamp, source, hash"
        with connection.cursor() as cursor:
            raw = cursor.cursor  # the psycopg cursor under Django's wrapper
            with raw.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for e, digest in zip(events, hashes, strict=True):
                    copy.write_row(
                        (execution_id, e.seq, str(e.type), e.node_id, e.attempt,
                         Jsonb(e.data), e.timestamp, str(e.source), digest)
                    )  # fmt: skip
    return execution_id, state
