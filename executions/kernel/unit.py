"""The unit of work: everything one transaction writes for one execution, written in one
place, inside the execution's lock (kernel/lock.py, whose docstring is the protocol: lock
order, the inbox, its lookers).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Protocol

from django.db import transaction

from executions import messages
from executions.definitions import definition_for
from executions.engine.capacity import crowded
from executions.engine.chain import event_hash
from executions.engine.containment import engine_failure
from executions.engine.decide import decide
from executions.engine.events import Decision, EventType, Source
from executions.engine.fold import apply_event
from executions.engine.payloads import RetryRequested
from executions.engine.readers import reader
from executions.engine.state import ExecutionState
from executions.engine.statuses import EXECUTION_TERMINAL
from executions.kernel import inbox
from executions.kernel.capacity import dispatch_after_commit, in_flight_cap, top_up
from executions.kernel.effects import Held, Hold, apply_effects
from executions.kernel.handle import Locked
from executions.kernel.projections import project_tasks, save_execution
from executions.kernel.writes import EventRow, Writes, insert_events, staged
from executions.models import Attempt, Event, Execution
from workflows import clock
from workflows.dsl import Definition

#: The nodes an event names beside its own (retry_requested's).
_NODES = reader(RetryRequested, "nodes")

#: Save a new snapshot once this many events have been appended since the last one.
SNAPSHOT_EVERY = 50


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
        writes: Writes | None,
    ) -> None:
        """At the commit, with the events and projections: staged in `writes` when
        given (they go out as one statement: kernel/writes.py), else written now."""


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
        self.now = now or clock.now()
        self._recheck = recheck and execution.last_seq > 0  # new: no worker knows it yet
        self._look = locked.look
        if self._look is not None and not recheck:
            self._look.taken = True  # its caller looks again itself (lock.advance_pending)
        self.outbox = messages.Outbox()
        #: The definition decide read, if it did: map items' Task rows are created from it.
        self.definition: Definition | None = None
        #: The new events' column values (EventRow), in seq order.
        self._rows: list[EventRow] = []
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
            # The row's values, not a model instance: on PostgreSQL they go into the
            # writes' statement as JSON (kernel/writes.py insert_events).
            fields["source"], fields["hash"] = source, digest
            self._rows.append(fields)
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

    def may_hold(self) -> bool:
        """Whether the execution may have an attempt held without a pool, for an eager
        claim to take: this unit held one, or it is past its cap. Otherwise none is held
        (each was published as it was scheduled, or by the top-up of the claim that took
        the execution back under its cap; the sweeper releases any left) and the claim's
        statement is spared (a fan-out's branch results schedule nothing)."""
        return self._held.capped > 0 or self.crowded()

    def took_held(self) -> None:
        """An attempt held by the cap was claimed in this unit (eager dispatch): one fewer
        for the commit's top-up to publish."""
        self._held.capped -= 1

    def restamp(self) -> None:
        """What follows happened now, not when the unit began (a claim behind a pool's
        lock: its task_started must not read earlier than the count that admitted it)."""
        self.now = clock.now()

    def look_later(self) -> None:
        """Skip the look after commit: the caller's next unit comes soon and takes what
        the inbox holds then (a worker that claimed its next attempt eagerly). Its thread
        still owes the look (kernel/handle.py `looks_owed`) until one of its own runs: if
        none does, the end of its message looks."""
        self._recheck = False

    def apply_effects(
        self, *, eager: bool = False, defer: bool = False, writes: Writes | None = None
    ) -> Attempt | None:
        """Create the rows what was appended so far calls for, before the commit: a worker
        that claims an attempt its own result scheduled does so in the same unit
        (`eager`: the first attempt scheduled is then held for that claim; `defer`: and
        not inserted but returned: the caller inserts it, claimed or held, and reports a
        claim with `took_held`). `writes`: the commit's, where the attempts may be staged
        (effects.apply_effects)."""
        applied = self._appended[self._applied :]
        hold = Hold.NONE
        if any(d.type == EventType.TASK_SCHEDULED for d in applied):
            if self.crowded():
                hold = Hold.ALL
            elif eager:
                hold = Hold.FIRST
        held = apply_effects(
            self.execution,
            applied,
            self.now,
            self.outbox,
            hold=hold,
            writes=writes,
            defer_first=defer,
        )
        deferred, held.first = held.first, None
        self._held.add(held)
        self._applied = len(self._appended)
        return deferred

    def commit(self, *, decided: bool) -> None:
        """Write what was appended. `decided`: every event up to now was decided upon (the
        sweeper advances executions whose decided_seq lags)."""
        execution, state = self.execution, self.state
        writes = staged()
        if self._rows and writes is not None:
            insert_events(writes, execution, self._rows)
        elif self._rows:
            Event.objects.bulk_create([Event(execution=execution, **row) for row in self._rows])
        # An execution being started is inserted by its first unit, with its attempts in
        # the same statement: no one can read them before it is sent.
        self.apply_effects(writes=writes if execution._state.adding else None)
        self._release_held()
        if decided:
            execution.decided_seq = execution.last_seq
        snapshot = _due_for_snapshot(execution, state)
        if snapshot:
            execution.snapshot = state.to_dict()
            execution.snapshot_seq = state.last_seq
        save_execution(execution, state, snapshot=snapshot, writes=writes)
        touched = touched_nodes(self._appended)
        project_tasks(execution, state, touched, self.definition, writes=writes)
        for watcher in self._watchers:
            watcher.stage(execution, state, self._appended, self.now, self.definition, writes)
        if writes is not None:
            writes.send()
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
        touched.update(_NODES(decision.data, decision.payload) or ())
    return touched
