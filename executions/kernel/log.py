"""The log's readers and the state cache: what the kernel, verification, replay and the
API read the event log with. The one writer is the unit of work (kernel/unit.py).

`load_state` is the writers' (inside the execution's lock: kernel/lock.py), and caches the
state its unit folds once the transaction commits; `state_now` and `state_at` are the
readers', outside any lock.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Sequence
from datetime import UTC
from typing import cast
from uuid import UUID

from django.db import connection, transaction
from psycopg.types.datetime import TimestamptzLoader
from psycopg.types.json import JsonbLoader

from executions.engine.chain import Linked
from executions.engine.events import Event as EngineEvent
from executions.engine.events import EventType, Source
from executions.engine.fold import apply_event, fold
from executions.engine.state import ExecutionState
from executions.models import Event, Execution


def to_engine(row: Event) -> EngineEvent:
    # The columns hold the enums' values, which the StrEnum members equal: the fold takes
    # them as they are, with no conversion per row (the casts are for the type checker).
    return EngineEvent(
        seq=row.seq,
        type=cast(EventType, row.type),
        timestamp=row.timestamp,
        node_id=row.node_id,
        attempt=row.attempt,
        data=row.data,
        source=cast(Source, row.source),
    )


def events_of(execution_id: UUID | str, *, after_seq: int = 0, upto_seq: int | None = None):
    rows = Event.objects.filter(execution_id=execution_id, seq__gt=after_seq)
    if upto_seq is not None:
        rows = rows.filter(seq__lte=upto_seq)
    return rows.order_by("seq")


#: States this process folded and committed, by execution id, most recent last. The state
#: at seq N is the fold of events 1..N forever (the log is append-only), so a cached state
#: plus the events after it is the current state, without decoding the O(nodes) snapshot.
_STATES: OrderedDict[str, ExecutionState] = OrderedDict()
STATE_CACHE_SIZE = 64


def load_state(execution: Execution) -> ExecutionState:
    """The snapshot plus the events after it: cost grows with new events, not history.

    Inside the execution's lock. The state this returns is the caller's to fold into; once
    the transaction commits it is cached (taken out now, so a rollback leaves nothing).
    """
    key = str(execution.pk)
    cached = _STATES.pop(key, None)
    if cached is not None and cached.last_seq <= execution.last_seq:
        base = cached
    elif execution.snapshot is not None:
        base = ExecutionState.from_dict(execution.snapshot)
    else:
        base = ExecutionState(key)
    state = base
    if state.last_seq < execution.last_seq:
        tail = log_rows(
            execution.pk, _EVENT_COLUMNS, after_seq=state.last_seq, upto_seq=execution.last_seq
        )
        for row in tail:
            apply_event(state, EngineEvent.stored(*row))
    if transaction.get_connection().in_atomic_block:
        transaction.on_commit(lambda: _remember(key, state))
    return state


def state_now(execution: Execution) -> ExecutionState:
    """A reader's copy of the current state (API, admin): the execution row's snapshot and
    the events after it, without the lock and without touching the writers' cache."""
    state = ExecutionState(str(execution.pk))
    if execution.snapshot is not None and execution.snapshot_seq <= execution.last_seq:
        state = ExecutionState.from_dict(execution.snapshot)
    tail = events_of(execution.pk, after_seq=state.last_seq, upto_seq=execution.last_seq)
    for row in tail.iterator(chunk_size=2000):
        apply_event(state, to_engine(row))
    return state


def is_cached(execution_id: UUID | str) -> bool:
    """Whether load_state will start from a state this process folded (not the snapshot)."""
    return str(execution_id) in _STATES


def _remember(key: str, state: ExecutionState) -> None:
    _STATES[key] = state
    _STATES.move_to_end(key)
    while len(_STATES) > STATE_CACHE_SIZE:
        _STATES.popitem(last=False)


_EVENT_COLUMNS = ("seq", "type", "timestamp", "node_id", "attempt", "data", "source")

#: Rows a page of log_rows reads (one round trip each).
LOG_PAGE = 5000


def log_rows(
    execution_id: UUID | str,
    columns: Sequence[str],
    *,
    after_seq: int = 0,
    upto_seq: int | None = None,
) -> Iterator[tuple]:
    """The log's `columns` as tuples in seq order, a page of LOG_PAGE rows per query.

    Pages by seq instead of a server-side cursor: an advance's tail of one or two events
    costs one round trip, not three (DECLARE, FETCH, CLOSE). On PostgreSQL the rows are
    read with psycopg's own loaders: Django's timestamptz loader is a pure-Python subclass
    of psycopg's, and parsing each timestamp there was the largest single cost of reading
    a long log. The values are the same: aware datetimes in UTC (the session's time zone,
    which Django sets), JSON through json.loads.
    """
    columns = list(columns)
    if "seq" not in columns:
        raise ValueError("log_rows pages by seq: ask for it")
    at = columns.index("seq")
    fast = connection.vendor == "postgresql" and connection.timezone is UTC
    while True:
        page = events_of(execution_id, after_seq=after_seq, upto_seq=upto_seq)
        page = page.values_list(*columns)[:LOG_PAGE]
        rows = _psycopg_rows(page) if fast else list(page)
        yield from rows
        if len(rows) < LOG_PAGE:
            return
        after_seq = rows[-1][at]


def _psycopg_rows(queryset) -> list[tuple]:
    sql, params = queryset.query.get_compiler(using=queryset.db).as_sql()
    with connection.cursor() as cursor:
        # On psycopg's cursor under Django's wrapper, which still runs (and counts) the query.
        adapters = cursor.cursor.adapters
        adapters.register_loader("timestamptz", TimestamptzLoader)
        adapters.register_loader("jsonb", JsonbLoader)
        cursor.execute(sql, params)
        return cursor.fetchall()


def engine_events(execution_id: UUID | str, *, upto_seq: int | None = None) -> list[EngineEvent]:
    """The log as engine events, without building a model instance per row (replays of
    long histories spend most of their time there otherwise)."""
    rows = log_rows(execution_id, _EVENT_COLUMNS, upto_seq=upto_seq)
    return [EngineEvent.stored(*row) for row in rows]


_LINK_COLUMNS = ("seq", "type", "node_id", "attempt", "data", "timestamp", "hash")


def linked_events(execution_id: UUID | str) -> Iterator[Linked]:
    """The log as the chain check reads it (executions/engine/chain.py), streamed."""
    return (Linked.stored(*row) for row in log_rows(execution_id, _LINK_COLUMNS))


#: A stored event's columns as both_forms() takes them.
LOG_COLUMNS = (*_EVENT_COLUMNS, "hash")


def both_forms(row: tuple) -> tuple[EngineEvent, Linked]:
    """One row of LOG_COLUMNS as an engine event and as a chain link: a verification
    reads the log once for the decisions and the hashes."""
    seq, kind, moment, node_id, attempt, data, source, digest = row
    return (
        EngineEvent(seq, kind, moment, node_id, attempt, data, source),
        Linked(seq, kind, node_id, attempt, data, moment, digest),
    )


def verifiable_log(execution_id: UUID | str) -> tuple[list[EngineEvent], list[Linked]]:
    """The whole log, read once, as engine events and as chain links."""
    events: list[EngineEvent] = []
    links: list[Linked] = []
    for seq, kind, moment, node_id, attempt, data, source, digest in log_rows(
        execution_id, LOG_COLUMNS
    ):
        events.append(EngineEvent.stored(seq, kind, moment, node_id, attempt, data, source))
        links.append(Linked.stored(seq, kind, node_id, attempt, data, moment, digest))
    return events, links


def state_at(execution_id: UUID | str, seq: int | None = None) -> ExecutionState:
    """The state folded from the first `seq` events (all of them when None)."""
    rows = log_rows(execution_id, _EVENT_COLUMNS, upto_seq=seq)
    return fold((EngineEvent.stored(*row) for row in rows), execution_id=str(execution_id))
