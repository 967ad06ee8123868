"""The one writer of events (UnitOfWork), and the loader of folded state.

Every append happens inside a transaction that holds the execution's lock
(kernel/lock.py, whose docstring is the protocol: lock order, the inbox, its lookers).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Protocol, cast
from uuid import UUID

from django.db import connection, transaction
from django.utils import timezone
from psycopg.types.datetime import TimestamptzLoader
from psycopg.types.json import JsonbLoader

from executions import messages
from executions.definitions import definition_for
from executions.engine.capacity import crowded
from executions.engine.chain import Linked, event_hash
from executions.engine.containment import engine_failure
from executions.engine.decide import decide
from executions.engine.events import Decision, EventType, Source
from executions.engine.events import Event as EngineEvent
from executions.engine.fold import apply_event, fold
from executions.engine.state import ExecutionState
from executions.engine.statuses import EXECUTION_TERMINAL
from executions.kernel import inbox
from executions.kernel.capacity import dispatch_after_commit, in_flight_cap, top_up
from executions.kernel.effects import Held, Hold, apply_effects
from executions.kernel.handle import Locked
from executions.kernel.projections import project_tasks, save_execution
from executions.models import Event, Execution
from workflows.dsl import Definition

#: Save a new snapshot once this many events have been appended since the last one.
SNAPSHOT_EVERY = 50


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


class Watcher(Protocol):
    """Something staged with a unit's events at its commit, in its transaction (the
    metrics' tally registers itself: executions/metrics/tally.py)."""

    def note(self, decisions: Sequence[Decision], state: ExecutionState) -> None:
        """Before `decisions` are folded into `state`."""

    def stage(
        self,
        execution: Execution,
        state: ExecutionState,
        appended: Sequence[Decision],
        now: datetime,
        definition: Definition | None,
    ) -> None:
        """At the commit, after the events and projections are written."""


#: Makes each unit's watchers from its starting state (watch()).
_WATCHERS: list[Callable[[ExecutionState], Watcher]] = []


def watch(factory: Callable[[ExecutionState], Watcher]) -> None:
    """Give every unit of work from now on a watcher made by `factory(state)`. Once per
    factory, however often it is called (an app's ready() may run more than once)."""
    if factory not in _WATCHERS:
        _WATCHERS.append(factory)


class UnitOfWork:
    """Everything one transaction writes for one execution, written in one place.

    `append` folds events into the state and chains them (executions/engine/chain.py),
    in memory; `commit` then inserts them all (one INSERT), creates the attempt and timer
    rows they call for (kernel/effects.py), saves the execution's sequence numbers,
    last_hash, snapshot and projection, updates the touched Task rows, and queues the
    messages for after the transaction commits. Inside the execution's lock (atomic()).
    Its fields are its own: callers tell it what happened through its methods.
    """

    def __init__(
        self,
        locked: Locked,
        state: ExecutionState,
        *,
        now: datetime | None = None,
        recheck: bool = True,
    ) -> None:
        """`recheck`: once the lock is let go, log what workers left in the inbox while
        it was held (they found it taken and went on: its holder looks for them). The
        unit takes over the look its lock registered, and looks after its own on_commit
        work: its state cached (load_state), its messages sent (the outbox)."""
        execution = locked.execution
        self.execution, self.state = execution, state
        self.now = now or timezone.now()
        self._recheck = recheck and execution.last_seq > 0  # new: no worker knows it yet
        self._look = locked.look
        if self._look is not None and not recheck:
            self._look.taken = True  # its caller looks again itself (lock.advance_pending)
        self.outbox = messages.Outbox()
        #: The definition decide read, if it did: map items' Task rows are created from it.
        self.definition: Definition | None = None
        self._rows: list[Event] = []
        self._appended: list[Decision] = []
        self._applied = 0
        #: What the unit holds back (effects.Held), and whether a claim took one of the
        #: execution's messages out of the broker: the commit then tops it up.
        self._held = Held()
        self._room_made = False
        #: Staged with the events at commit (the metrics' deltas: executions/metrics/).
        self._watchers: list[Watcher] = [factory(state) for factory in _WATCHERS]
        # Facts workers left while others held the lock come first: every decision of
        # this unit is taken on them, and a cancel sees the results that came before it.
        inbox.drain(self, waiting=locked.inbox_waiting)
        if self._look is not None and self._appended:
            self._look.uncommitted = True  # cleared from the inbox: this unit must commit

    def append(
        self, decisions: Sequence[Decision], *, source: Source, at: datetime | None = None
    ) -> None:
        """Fold `decisions` into the state as events from `source`, and stage their rows.
        `at`: when they happened, if before the unit began (a fact from the inbox); the
        unit's own time then moves on to it, never back."""
        execution = self.execution
        moment = at or self.now
        for watcher in self._watchers:
            watcher.note(decisions, self.state)
        for decision in decisions:
            seq = execution.last_seq + 1
            apply_event(self.state, decision.as_event(seq, moment))
            fields = {
                "seq": seq,
                "type": decision.type,
                "node_id": decision.node_id,
                "attempt": decision.attempt,
                "data": decision.data,
                "timestamp": moment,
            }
            digest = event_hash(execution.last_hash, **fields)
            self._rows.append(Event(execution=execution, source=source, hash=digest, **fields))
            execution.last_seq, execution.last_hash = seq, digest
        self._appended.extend(decisions)
        if at is not None:
            self.now = max(self.now, at)

    def decide(self) -> int:
        """Decide upon the unit's state and append the decisions. Returns how many."""
        self.definition, decisions = _decide(self.execution, self.state)
        self.append(decisions, source=Source.ENGINE)
        return len(decisions)

    @property
    def pending(self) -> bool:
        """Whether the unit has anything to write: events appended, or some to decide on."""
        return bool(self._appended) or self.execution.decided_seq < self.execution.last_seq

    # The rules of held attempts (kernel/capacity.py), as the unit's callers report what
    # happened: what frees a slot or makes room is released by the commit.

    def crowded(self) -> bool:
        """Whether the execution is past its in-flight cap: only then can attempts be held
        for want of room (read before a claim, for made_room)."""
        return crowded(self.state, in_flight_cap())

    def freed_slot(self, pool: str | None) -> None:
        """An attempt of `pool` ended (its result logged): its slot is free, so the pool
        is dispatched after commit. Without a pool, nothing is freed."""
        if pool:
            self._held.pools.add(pool)

    def made_room(self, *, published: bool, pool: str | None, crowded_before: bool) -> None:
        """An attempt was claimed: if its message (`published`, no pool) left the broker of
        an execution that was past its cap (`crowded_before`), the commit tops it up."""
        if published and not pool and crowded_before:
            self._room_made = True

    def took_held(self) -> None:
        """An attempt held by the cap was claimed in this unit (eager dispatch): one fewer
        for the commit's top-up to publish."""
        self._held.capped -= 1

    def restamp(self) -> None:
        """What follows happened now, not when the unit began (a claim behind a pool's
        lock: its task_started must not read earlier than the count that admitted it)."""
        self.now = timezone.now()

    def look_later(self) -> None:
        """Skip the look after commit: the caller's next unit comes soon and takes what
        the inbox holds then (a worker that claimed its next attempt eagerly)."""
        self._recheck = False

    def apply_effects(self, *, eager: bool = False) -> None:
        """Create the rows what was appended so far calls for, before the commit: a worker
        that claims an attempt its own result scheduled does so in the same unit
        (`eager`: the first attempt scheduled is then held for that claim)."""
        applied = self._appended[self._applied :]
        hold = Hold.NONE
        if any(d.type == EventType.TASK_SCHEDULED for d in applied):
            if self.crowded():
                hold = Hold.ALL
            elif eager:
                hold = Hold.FIRST
        held = apply_effects(self.execution, applied, self.now, self.outbox, hold=hold)
        self._held.add(held)
        self._applied = len(self._appended)

    def commit(self, *, decided: bool) -> None:
        """Write what was appended. `decided`: every event up to now was decided upon (the
        sweeper advances executions whose decided_seq lags)."""
        execution, state = self.execution, self.state
        if self._rows:
            Event.objects.bulk_create(self._rows)
        self.apply_effects()
        self._release_held()
        if decided:
            execution.decided_seq = execution.last_seq
        snapshot = _due_for_snapshot(execution, state)
        if snapshot:
            execution.snapshot = state.to_dict()
            execution.snapshot_seq = state.last_seq
        save_execution(execution, state, snapshot=snapshot)
        project_tasks(execution, state, touched_nodes(self._appended), self.definition)
        for watcher in self._watchers:
            watcher.stage(execution, state, self._appended, self.now, self.definition)
        self._rows, self._appended, self._applied = [], [], 0
        look = self._look
        if look is not None:
            look.taken, look.uncommitted = True, False
        if self._recheck and look is not None:
            # Registered last: it runs after the state is cached and the messages sent.
            transaction.on_commit(look.run)
            self._recheck = False  # once, however often the unit commits

    def _release_held(self) -> None:
        """Publish what fits of what this unit held or freed (kernel/capacity.py)."""
        held, self._held = self._held, Held()
        if (held.capped > 0 or self._room_made) and not self.state.paused:
            top_up(self.execution, self.now, self.outbox)
        self._room_made = False
        dispatch_after_commit(held.pools, self.outbox)


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


def _due_for_snapshot(execution: Execution, state: ExecutionState) -> bool:
    # A snapshot costs O(nodes) to write; spacing them by the node count keeps that O(1)
    # per event, and the folded tail after one stays short next to the history it saves.
    return state.last_seq - execution.snapshot_seq >= max(SNAPSHOT_EVERY, 2 * len(state.nodes))


def touched_nodes(decisions: Iterable[Decision]) -> set[str]:
    """Nodes whose projection an event may change (retry_requested names several)."""
    touched: set[str] = set()
    for decision in decisions:
        if decision.node_id:
            touched.add(decision.node_id)
        touched.update(decision.data.get("nodes") or ())
    return touched
