"""Coalesced orchestration (executions/kernel/inbox.py): a worker that finds its execution's lock
taken writes its claim or result into the attempt's row and goes on; the lock's holder
logs it after its commit, the sweeper if the holder could not. On PostgreSQL (SKIP LOCKED),
with real connections: a lock held by another thread is a real row lock."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar
from uuid import UUID

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext

from executions import messages, tasks
from executions.engine.events import Decision, EventType, Source
from executions.integrity import check, rebuild_rows
from executions.kernel.handle import Locked, looks_owed
from executions.kernel.lock import LOOK_UNITS, advance_pending, lock_execution, try_lock_execution
from executions.kernel.log import load_state, verifiable_log
from executions.kernel.unit import UnitOfWork
from executions.models import Attempt, AttemptStatus, Event, Execution, Task
from executions.services import attempts, control, signals
from executions.services import sweep as sweeper
from executions.services.attempts import attempt_claim, attempt_complete, attempt_fail
from executions.worker import runtime
from executions.worker.lease import InlineKeeper
from nodes.errors import NodeCancelled
from tests.factories import start, timeline
from tests.waiting import eventually, scaled

pytestmark = pytest.mark.django_db(transaction=True)

T = TypeVar("T")

CHAIN = {
    "nodes": [
        {"id": "a", "type": "function", "function": "std.echo", "input": {"n": 1}},
        {"id": "b", "type": "function", "function": "std.echo", "depends_on": ["a"]},
    ]
}


@pytest.fixture(autouse=True)
def _postgres_only() -> None:
    if not connection.features.has_select_for_update_skip_locked:
        pytest.skip("the inbox needs SKIP LOCKED (PostgreSQL); SQLite serialises writers")


class Held:
    """The execution's lock, held by another thread until it is let go."""

    def __init__(self) -> None:
        self.taken, self.release, self.letting_go = (threading.Event() for _ in range(3))

    def without_waiting(self, call: Callable[[], T]) -> T:
        """The call's result, returned while the lock is still held: so it did not wait for
        the lock (a call that waited could only return once the holder let go)."""
        result = call()
        assert not self.letting_go.is_set(), "the worker waited for the execution's lock"
        return result


@contextmanager
def held(execution: Execution, *, recheck: bool) -> Iterator[Held]:
    """The execution's lock, held by another thread (its own connection) until the block
    ends. recheck: the holder is a unit of work's (it looks at the inbox after its
    commit); False: a bare row lock, like a holder that died before looking."""
    lock = Held()

    def hold() -> None:
        try:
            with transaction.atomic():
                if recheck:
                    locked = lock_execution(execution.pk)
                    UnitOfWork(locked, load_state(locked.execution))
                else:
                    Execution.objects.select_for_update().get(pk=execution.pk)
                lock.taken.set()
                lock.release.wait(scaled(30))
                lock.letting_go.set()  # before the commit that lets go of it
        finally:
            connections.close_all()

    thread = threading.Thread(target=hold)
    thread.start()
    assert lock.taken.wait(scaled(10))
    try:
        yield lock
    finally:
        lock.release.set()
        thread.join(scaled(30))


def verified(execution: Execution) -> None:
    execution.refresh_from_db()
    events, linked = verifiable_log(execution.pk)
    assert check(execution, linked, events) == []


def completed_elsewhere(attempt_id: int, worker_id: str, output: Any) -> bool | None:
    """attempt_complete on another thread and connection (a worker's, while this thread
    holds the lock), waited for: what it returned, None if it raised."""
    returned: list[bool] = []

    def worker() -> None:
        try:
            returned.append(
                attempt_complete(attempt_id=attempt_id, worker_id=worker_id, output=output)
            )
        finally:
            connections.close_all()

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(scaled(10))
    return returned[0] if returned else None


def attempt_of(execution: Execution, node: str) -> Attempt:
    return Attempt.objects.get(execution=execution, node_id=node)


def test_claim_and_result_with_the_lock_taken_go_into_the_row_then_the_holder_logs_them():
    execution = start(CHAIN)
    a = attempt_of(execution, "a")
    assert a.payload == {"input": {"n": 1}}
    with held(execution, recheck=True) as lock:
        claimed = lock.without_waiting(lambda: attempt_claim(attempt_id=a.pk, worker_id="w"))
        assert claimed is not None
        assert claimed.input == {"n": 1}
        assert lock.without_waiting(
            lambda: attempt_complete(attempt_id=a.pk, worker_id="w", output=7)
        )
        a.refresh_from_db()
        assert (a.status, a.unlogged, a.result) == ("succeeded", True, {"output": 7})
        assert a.payload is None  # the table stays slim once claimed
        # Nothing in the log yet: the holder has it.
        assert [t for _, t, node, _ in timeline(execution) if node == "a"] == ["task_scheduled"]
    # The holder let go and looked: both facts logged, in order, b scheduled.
    a.refresh_from_db()
    assert (a.unlogged, a.result) == (False, None)
    kinds = [(t, node) for _, t, node, _ in timeline(execution)]
    assert kinds[-3:] == [("task_started", "a"), ("task_completed", "a"), ("task_scheduled", "b")]
    started = Event.objects.get(execution=execution, type="task_started", node_id="a")
    assert started.timestamp == a.claimed_at  # when it was claimed, not when logged
    assert started.source == Source.WORKER
    assert attempt_of(execution, "b").status == AttemptStatus.SCHEDULED
    verified(execution)


def test_a_result_that_finds_the_lock_taken_costs_two_statements():
    """The result's statement tries the lock and, finding it taken, writes the result into
    the inbox (kernel/lock.py try_lock_or_leave); once that commits, the worker looks
    straight with the lock (whose statement reads the inbox), with no question first
    whether the inbox holds anything. Two statements: a fan-out's branch that finds the
    lock taken pays this. BEGIN and COMMIT are not counted."""
    execution = start(CHAIN)
    a = attempt_of(execution, "a")
    with held(execution, recheck=True) as lock:
        claimed = lock.without_waiting(lambda: attempt_claim(attempt_id=a.pk, worker_id="w"))
        assert claimed is not None
        with CaptureQueriesContext(connection) as result:
            assert lock.without_waiting(
                lambda: attempt_complete(attempt_id=a.pk, worker_id="w", output=7, claimed=claimed)
            )
        statements = [
            q["sql"].strip()[:50]
            for q in result.captured_queries
            if q["sql"].strip() not in ("BEGIN", "COMMIT")
        ]
        assert len(statements) == 2, statements
    # The holder let go and looked: logged, b scheduled.
    a.refresh_from_db()
    assert not a.unlogged
    assert attempt_of(execution, "b").status == AttemptStatus.SCHEDULED
    verified(execution)


def test_a_holder_that_never_looks_leaves_it_to_the_sweeper():
    execution = start(CHAIN)
    a = attempt_of(execution, "a")
    with held(execution, recheck=False) as lock:
        claim = lock.without_waiting(lambda: attempt_claim(attempt_id=a.pk, worker_id="w"))
        assert claim is not None
        assert lock.without_waiting(
            lambda: attempt_fail(attempt_id=a.pk, worker_id="w", error=_error())
        )
    assert Attempt.objects.filter(execution=execution, unlogged=True).count() == 1
    # verify_logs meanwhile: a row ahead of its log is in the inbox, not a disagreement.
    verified(execution)
    report = sweeper.SweepReport()
    sweeper._drain_inboxes(report, None, [])  # type: ignore[arg-type]
    assert report.advanced == 1
    assert not Attempt.objects.filter(execution=execution, unlogged=True).exists()
    failed = Event.objects.get(execution=execution, type="task_failed", node_id="a")
    assert failed.data["error"]["message"] == "boom"
    execution.refresh_from_db()
    assert execution.status == "failed"
    verified(execution)


def test_a_result_that_waited_while_its_node_was_cancelled_is_dropped():
    """The cancel's unit read an empty inbox; the worker's result came while it held the
    lock: the log says cancelled, so the result is dropped and the row agrees."""
    execution = start(CHAIN)
    a = attempt_of(execution, "a")
    assert attempt_claim(attempt_id=a.pk, worker_id="w") is not None
    assert advance_pending(execution.pk, claims=True) == 1  # the claim: logged

    def worker() -> None:
        try:
            assert attempt_complete(attempt_id=a.pk, worker_id="w", output=1)
        finally:
            connections.close_all()

    with transaction.atomic():
        locked = lock_execution(execution.pk)
        work = UnitOfWork(locked, load_state(locked.execution))  # an empty inbox
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join(10)
        assert Attempt.objects.get(pk=a.pk).result == {"output": 1}  # while the lock was held
        request = Decision(EventType.WORKFLOW_CANCEL_REQUESTED, data={"by": "test"})
        work.append([request], source=Source.API)
        work.decide()
        work.commit(decided=True)
    a.refresh_from_db()
    assert (a.status, a.unlogged) == (AttemptStatus.CANCELLED, False)
    assert not Event.objects.filter(execution=execution, type="task_completed").exists()
    execution.refresh_from_db()
    assert execution.status == "cancelled"
    verified(execution)


def test_a_duplicate_result_after_the_inbox_write_is_refused():
    execution = start(CHAIN)
    a = attempt_of(execution, "a")
    with held(execution, recheck=False):
        assert attempt_claim(attempt_id=a.pk, worker_id="w") is not None
        assert attempt_complete(attempt_id=a.pk, worker_id="w", output=1)
        assert not attempt_complete(attempt_id=a.pk, worker_id="w", output=2)
        assert not attempt_fail(attempt_id=a.pk, worker_id="w", error=_error())
    assert advance_pending(execution.pk) == 1
    completed = Event.objects.filter(execution=execution, type="task_completed", node_id="a")
    assert [e.data["output"] for e in completed] == [1]
    verified(execution)


def test_a_claim_is_logged_by_its_result_s_unit_or_within_a_sweeper_tick():
    """One UPDATE claims: no lock, no unit of work of its own. Its task_started, stamped
    with the claim's time, goes in with the result (one unit per node), or, for an
    attempt that runs on, at the sweeper's next tick."""
    execution = start(CHAIN)
    a = attempt_of(execution, "a")
    with CaptureQueriesContext(connection) as claim:
        assert attempt_claim(attempt_id=a.pk, worker_id="w") is not None
    assert len(claim.captured_queries) == 1  # one conditional UPDATE, its row read as it was
    a.refresh_from_db()
    assert (a.status, a.unlogged) == ("running", True)
    assert timeline(execution)[-1][1:3] == ("task_scheduled", "a")
    # Still running at the next tick: logged then, so it shows as running.
    sweeper._drain_inboxes(sweeper.SweepReport(), None, [])  # type: ignore[arg-type]
    started = Event.objects.get(execution=execution, type="task_started", node_id="a")
    assert started.timestamp == a.claimed_at
    assert Task.objects.get(execution=execution, node_id="a").status == "running"
    # The other path: claimed and finished, both facts go in with the result's unit.
    assert attempt_complete(attempt_id=a.pk, worker_id="w", output=1)
    b = attempt_of(execution, "b")
    assert attempt_claim(attempt_id=b.pk, worker_id="w") is not None
    assert attempt_complete(attempt_id=b.pk, worker_id="w", output=2)
    kinds = [(t, node) for _, t, node, _ in timeline(execution)]
    assert kinds[-3:] == [
        ("task_started", "b"),
        ("task_completed", "b"),
        ("workflow_completed", None),
    ]
    verified(execution)


def backend_pid() -> int:
    """This thread's PostgreSQL backend, as pg_locks and pg_blocking_pids name it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def waits_on(waiter: int, holder: int) -> bool:
    """Whether the backend `waiter` is waiting for a lock that `holder` holds."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s = ANY(pg_blocking_pids(%s))", [holder, waiter])
        return cursor.fetchone()[0]


def _holder(
    execution: Execution,
    taken: threading.Event,
    release: threading.Event,
    pids: list[int] | None = None,
) -> None:
    """A unit of work that drains (so it locks the rows of unlogged claims), commits when
    released, and looks after its commit. `pids`: gets its backend's pid."""
    try:
        with transaction.atomic():
            if pids is not None:
                pids.append(backend_pid())
            locked = lock_execution(execution.pk)
            work = UnitOfWork(locked, load_state(locked.execution))
            if work.pending:
                work.decide()
            work.commit(decided=True)
            taken.set()
            release.wait(scaled(30))
    finally:
        connections.close_all()


def test_a_holder_that_looks_before_the_worker_writes_is_covered_by_the_worker_s_look(
    monkeypatch,
):
    """The worker finds the lock taken and writes its result in the same statement, and
    before that write commits the holder commits and looks (and finds nothing): the
    worker looks after its write commits, so nothing waits."""
    execution = start(CHAIN)
    a = attempt_of(execution, "a")
    assert attempt_claim(attempt_id=a.pk, worker_id="w") is not None
    # The claim logged first: the holder's drain must not lock a's row, or the write would
    # wait on it (the next test) instead of landing while the lock is held.
    assert advance_pending(execution.pk, claims=True) == 1
    taken, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=_holder, args=(execution, taken, release))
    holder.start()
    assert taken.wait(10)
    real = attempts.try_lock_or_leave

    def try_lock(execution_id: UUID | str, **options: Any) -> tuple[Locked | None, int]:
        got = real(execution_id, **options)
        if got[0] is None:  # the holder commits and looks before the write commits
            release.set()
            holder.join(10)
        return got

    monkeypatch.setattr(attempts, "try_lock_or_leave", try_lock)
    assert attempt_complete(attempt_id=a.pk, worker_id="w", output=7)
    a.refresh_from_db()
    assert not a.unlogged
    assert Event.objects.filter(execution=execution, type="task_completed").count() == 1
    verified(execution)


def running_query(pid: int) -> str:
    """The start of the statement the backend `pid` is running (or last ran)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", [pid])
        return cursor.fetchone()[0]


def _a_result_waits_on_the_drain_s_row_lock() -> None:
    execution = start(CHAIN)
    a = attempt_of(execution, "a")
    assert attempt_claim(attempt_id=a.pk, worker_id="w") is not None
    taken, release = threading.Event(), threading.Event()
    pids: list[int] = []
    recorded: list[bool] = []
    holder = threading.Thread(target=_holder, args=(execution, taken, release, pids))
    holder.start()
    assert taken.wait(scaled(10))

    def worker() -> None:
        try:
            pids.append(backend_pid())
            recorded.append(attempt_complete(attempt_id=a.pk, worker_id="w", output=7))
        finally:
            connections.close_all()

    thread = threading.Thread(target=worker)
    thread.start()
    # It found the lock taken and waits on the row the holder's drain locked: let go only
    # once PostgreSQL says so, so that every run tests that wait.
    eventually(lambda: len(pids) == 2 and waits_on(pids[1], pids[0]), 10, "no wait on the row")
    # The statement waiting is the lock's own: the lock was tried and skipped, and its
    # inbox write waits. The holder commits and looks between the two.
    assert running_query(pids[1]).lstrip().startswith("WITH locked AS MATERIALIZED")
    release.set()
    holder.join(scaled(10))
    thread.join(scaled(10))
    assert not thread.is_alive(), "the worker's result never landed"
    assert recorded == [True]
    a.refresh_from_db()
    assert (a.status, a.unlogged, a.result) == (AttemptStatus.SUCCEEDED, False, None)
    completed = Event.objects.filter(execution=execution, type="task_completed", node_id="a")
    assert [e.data["output"] for e in completed] == [7]
    assert attempt_of(execution, "b").status == AttemptStatus.SCHEDULED
    verified(execution)


def test_a_holder_that_commits_between_the_failed_lock_and_the_inbox_write_loses_nothing():
    """No patching. The failed lock and the inbox write are one statement (kernel/lock.py
    try_lock_or_leave), and the holder can still commit between the two: its drain
    locked the row of the unlogged claim, so the write waits on it, and the holder
    commits and looks (finding nothing yet). The write then lands on the row as the drain
    left it, commits, and the worker's look logs it: recorded once, not lost, without the
    sweeper."""
    for _ in range(3):
        _a_result_waits_on_the_drain_s_row_lock()


def test_rebuilding_the_rows_logs_the_inbox_first():
    """verify_logs' repair rebuilds attempt rows from the log: what waits in the inbox
    goes into the log first, or the rebuild would undo a result nobody logged."""
    execution = start(CHAIN)
    a = attempt_of(execution, "a")
    with held(execution, recheck=False):
        assert attempt_claim(attempt_id=a.pk, worker_id="w") is not None
        assert attempt_complete(attempt_id=a.pk, worker_id="w", output=7)
    rebuild_rows(execution.pk)
    a.refresh_from_db()
    assert (a.status, a.unlogged) == ("succeeded", False)
    completed = Event.objects.get(execution=execution, type="task_completed", node_id="a")
    assert completed.data == {"output": 7}
    verified(execution)


def test_a_claim_in_one_statement_never_beats_a_pause():
    """The common claim is one statement, which checks the execution is not paused."""
    execution = start(CHAIN)
    a = attempt_of(execution, "a")
    control.execution_pause(execution_id=execution.pk, by="op")
    with CaptureQueriesContext(connection) as claim:
        assert attempts._claim_in_one(a.pk, "w") is None
    assert len(claim.captured_queries) == 1
    assert attempt_claim(attempt_id=a.pk, worker_id="w") is None
    a.refresh_from_db()
    assert a.status == "scheduled"


def test_a_claim_without_the_lock_never_beats_a_pause(monkeypatch):
    """The pause commits between the claim's SELECT and its UPDATE (the path of a claim
    its one statement did not take): the UPDATE itself checks the execution is not
    paused, so the function does not run."""
    execution = start(CHAIN)
    a = attempt_of(execution, "a")
    monkeypatch.setattr(attempts, "_claim_in_one", lambda attempt_id, worker_id: None)
    real = attempts.definition_for

    def pause_first(version_id: int) -> object:
        control.execution_pause(execution_id=execution.pk, by="op")  # commits here
        return real(version_id)

    monkeypatch.setattr(attempts, "definition_for", pause_first)
    assert attempt_claim(attempt_id=a.pk, worker_id="w") is None
    a.refresh_from_db()
    assert a.status == "scheduled"


def _error() -> dict[str, object]:
    return {"type": "Boom", "message": "boom", "retryable": False}


def test_the_lock_hands_a_typed_handle_and_leaves_the_row_as_the_model_reads_it():
    """What the lock owes the inbox travels on the Locked handle (kernel/handle.py), not
    as attributes stuck onto the model instance."""
    execution = start(CHAIN)
    a = attempt_of(execution, "a")
    with transaction.atomic():
        locked = try_lock_execution(execution.pk)
        assert locked is not None
        assert locked.inbox_waiting is False  # read with the lock: nothing left unlogged
        assert locked.look is not None
        assert not locked.look.taken
        assert not hasattr(locked.execution, "inbox_waiting")
        assert not hasattr(locked.execution, "inbox_look")
    assert attempt_claim(attempt_id=a.pk, worker_id="w") is not None  # into the inbox
    with transaction.atomic():
        locked = try_lock_execution(execution.pk)
        assert locked is not None
        assert locked.inbox_waiting is True
        UnitOfWork(locked, load_state(locked.execution)).commit(decided=True)  # drains it
        assert locked.look is not None
        assert locked.look.taken  # the unit looks after its commit, not the lock
    assert not Attempt.objects.filter(execution=execution, unlogged=True).exists()
    verified(execution)


FORK = {
    "nodes": [
        {"id": "a", "type": "function", "function": "std.noop"},
        {"id": "b", "type": "function", "function": "std.noop", "depends_on": ["a"]},
        {"id": "c", "type": "function", "function": "std.noop", "depends_on": ["a"]},
        {"id": "d", "type": "function", "function": "std.noop", "depends_on": ["b"]},
    ]
}


def test_a_look_an_eager_unit_left_is_taken_at_the_end_of_the_message(monkeypatch):
    """The look at the end of a message runs only when one is owed: here it is. b's unit
    claims d eagerly and leaves its look to this worker's next unit; meanwhile another
    worker's result for c finds the lock taken and goes into the inbox (its own look finds
    the lock still taken). d then stops cancelled, with no unit of its own: the end of the
    message looks, and logs c's result, without the sweeper."""
    execution = start(FORK)
    a = attempt_of(execution, "a")
    assert attempt_claim(attempt_id=a.pk, worker_id="w") is not None
    assert attempt_complete(attempt_id=a.pk, worker_id="w", output=None)
    c = attempt_of(execution, "c")
    other = attempt_claim(attempt_id=c.pk, worker_id="other")
    assert other is not None
    # Its claim logged: b's unit must not lock c's row (the result below would wait on it).
    assert advance_pending(execution.pk, claims=True) == 1
    real_look_later = UnitOfWork.look_later
    left: list[bool | None] = []

    def look_later(work: UnitOfWork) -> None:
        real_look_later(work)
        # while this unit holds the lock
        left.append(completed_elsewhere(c.pk, "other", 3))

    def execute(claimed: Any, ctx: Any) -> Any:
        if claimed.node.id == "d":
            raise NodeCancelled()
        return None

    monkeypatch.setattr(UnitOfWork, "look_later", look_later)
    monkeypatch.setattr(runtime, "execute", execute)
    b = attempt_of(execution, "b")
    with messages.diverted(lambda *message: None):
        runtime.run_attempt(b.pk, keeper=InlineKeeper())
    assert left == [True]  # written into the inbox, not logged: the lock was taken
    assert not Attempt.objects.filter(execution=execution, unlogged=True).exists()
    completed = Event.objects.filter(execution=execution, type="task_completed", node_id="c")
    assert [e.data["output"] for e in completed] == [3]
    assert attempt_of(execution, "d").status == AttemptStatus.RUNNING  # stopped, unrecorded
    verified(execution)


def test_a_message_whose_units_all_looked_owes_no_look_at_its_end():
    """The worker keeps what its thread owes (kernel/handle.py looks_owed): a unit that
    looks after its commit owes nothing, an eager unit owes its look, a result written
    into the inbox owes nothing once its look ran."""
    execution = start(CHAIN)
    a = attempt_of(execution, "a")
    with looks_owed() as owed:
        claimed = attempt_claim(attempt_id=a.pk, worker_id="w")
        assert claimed is not None
        nxt = attempts.attempt_complete_and_claim_next(
            attempt_id=a.pk, worker_id="w", output=1, claimed=claimed
        )
        assert nxt is not None
        assert owed == {str(execution.pk)}  # b claimed eagerly: its unit left its look
        with held(execution, recheck=True):
            assert attempt_complete(attempt_id=nxt.attempt_id, worker_id="w", output=2, claimed=nxt)
        assert owed == set()  # into the inbox, then looked: nothing owed
    execution.refresh_from_db()
    assert execution.status == "succeeded"
    verified(execution)


SIGNAL_AND_STEP = {
    "nodes": [
        {"id": "a", "type": "function", "function": "std.echo", "input": {"n": 1}},
        {"id": "s", "type": "signal", "signal": "go"},
    ]
}


@pytest.mark.parametrize("outer", [False, True], ids=["own transaction", "caller's transaction"])
def test_a_holder_whose_transaction_rolls_back_still_looks(monkeypatch, outer):
    """An API request takes the lock and is refused after it (an unknown signal: the
    transaction rolls back). While it held the lock a worker's result found it taken,
    went into the inbox, and its look found the lock still taken. The rolled-back holder
    registered no look after commit: the end of its block (kernel/lock.py looking_after)
    looks, outside the transaction, and logs the result without the sweeper. `outer`:
    the request runs in a transaction of its caller's, its own a savepoint (rolled back
    to, it lets go of the lock): the look comes once the caller's commits."""
    execution = start(SIGNAL_AND_STEP)
    a = attempt_of(execution, "a")
    assert attempt_claim(attempt_id=a.pk, worker_id="w") is not None
    recorded: list[bool | None] = []
    real = signals.definition_for

    def definition_for(version_id: int) -> Any:
        # while the request holds the lock
        recorded.append(completed_elsewhere(a.pk, "w", 7))
        return real(version_id)

    monkeypatch.setattr(signals, "definition_for", definition_for)
    with transaction.atomic() if outer else contextlib.nullcontext():
        with pytest.raises(control.UnknownNode):
            signals.execution_signal(execution_id=execution.pk, name="nobody waits for this")
        if outer:
            assert Attempt.objects.get(pk=a.pk).unlogged  # not before the caller commits
    assert recorded == [True]
    a.refresh_from_db()
    assert (a.status, a.unlogged) == (AttemptStatus.SUCCEEDED, False)
    completed = Event.objects.filter(execution=execution, type="task_completed", node_id="a")
    assert [e.data["output"] for e in completed] == [7]
    assert not Event.objects.filter(execution=execution, type="signal_received").exists()
    verified(execution)


ROOTS = {
    "nodes": [
        {"id": f"b{n}", "type": "function", "function": "std.echo", "input": {"n": n}}
        for n in range(1, LOOK_UNITS + 2)
    ]
}


@pytest.mark.parametrize("looker", ["lease keeper", "sweeper"])
def test_a_look_cut_at_look_units_outside_a_message_hands_on_what_its_last_unit_let_in(
    monkeypatch, looker
):
    """A look with no worker message around it (the lease keeper's, worker/runtime.py
    show_running; the sweeper's inbox phase) runs LOOK_UNITS units, each draining a
    result another worker wrote while the unit before held the lock; the last unit's
    result, whose writer's look found that unit holding the lock, is owed a look after
    it. The cut look hands it on to a message (kernel/lock.py hand_on), which logs it:
    not left to the sweeper's next tick."""
    execution = start(ROOTS)
    rows = [attempt_of(execution, f"b{n}") for n in range(1, LOOK_UNITS + 2)]
    claims = [attempt_claim(attempt_id=row.pk, worker_id="w") for row in rows]
    assert None not in claims
    assert advance_pending(execution.pk, claims=True) == 1  # the claims: logged
    with held(execution, recheck=False):  # b1's result into the inbox, no look after it
        assert attempt_complete(attempt_id=rows[0].pk, worker_id="w", output=1)
    looker = threading.get_ident()
    units: list[int] = []
    recorded: list[bool | None] = []
    real_commit = UnitOfWork.commit

    def commit(work: UnitOfWork, *, decided: bool) -> None:
        real_commit(work, decided=decided)
        if threading.get_ident() != looker:
            return
        units.append(1)
        row = rows[len(units)]  # the next result, written while this unit holds the lock
        recorded.append(completed_elsewhere(row.pk, "w", 0))

    sent: list[tuple[str, tuple[Any, ...]]] = []
    monkeypatch.setattr(UnitOfWork, "commit", commit)
    with messages.diverted(lambda name, args, countdown: sent.append((name, args))):
        if looker == "lease keeper":
            runtime.show_running(claims[0])  # type: ignore[arg-type]
        else:
            sweeper._drain_inboxes(sweeper.SweepReport(), None, [])  # type: ignore[arg-type]
    monkeypatch.setattr(UnitOfWork, "commit", real_commit)
    assert len(units) == LOOK_UNITS  # cut
    assert recorded == [True] * LOOK_UNITS  # each into the inbox: the lock was taken
    last = rows[-1]
    last.refresh_from_db()
    assert last.unlogged  # the last unit's: logged by no look so far
    assert sent, "the cut look handed nothing on"
    assert sent == [(messages.LOOK_INBOX, (str(execution.pk),))]
    tasks.look_inbox(str(execution.pk))  # the message, as a worker takes it
    assert not Attempt.objects.filter(execution=execution, unlogged=True).exists()
    execution.refresh_from_db()
    assert execution.status == "succeeded"
    verified(execution)
