"""An execution's lock, and the protocol of everything done under it.

**The lock.** Everything that writes an execution's log, or the rows the log decides
(attempts, timers, tasks, the execution's own projection), does so inside one transaction
holding the execution's row lock (`lock_execution`; `try_lock_execution` for a worker that
will not wait). So seqs are contiguous (the unique (execution, seq) constraint is the
backstop if that is ever wrong), and each unit of work (kernel/unit.py) folds, decides and
writes on a state nobody else is changing. The lock returns a `Locked` handle
(kernel/handle.py): the row, and what its holder owes the inbox once it lets go.

**Lock order.** The Execution row first, then any Attempt, Timer or Task rows of that
execution; then, for a pool node's claim (kernel/capacity.py `pool_admits`), the Pool
row. A pool's dispatch takes the Pool row alone, never an Execution lock, and nothing
takes two Execution locks in one transaction, so no cycle can form. One exception keeps
it so: concurrency admission (services/admission.py) takes a key's ConcurrencyKey row
first, then the rows of the held executions it starts, which no one else locks but to
cancel them; nobody takes a key while holding the lock of an execution another
transaction can see held (a start holds only its own new, uncommitted row; a retry takes
the key before its execution). Messages go out after commit (messages.Outbox), never
under a lock.

**The inbox: write, then look.** PostgreSQL only (SKIP LOCKED; on SQLite the write lock is
the database's, every worker waits for it, and there is no inbox). A worker whose claim
needs nothing of the state, or whose result finds the lock taken, writes its fact into the
attempt's row (`unlogged`, one conditional UPDATE: kernel/inbox.py) and goes on with its
next message instead of queueing on the lock. A result's write is the failed lock's own
statement (`try_lock_or_leave`): beside the UPDATE that sets the row if the lock is taken,
one that writes the result into it if not, each conditional on the one MATERIALIZED read
of the locked row, so exactly one of them runs. Every unit of work drains the inbox first
(its facts become events in the order they happened, then one decision for all of them).
Every holder of the lock looks at the inbox once it lets go (`after_commit`), whether its
transaction committed or rolled back. The worker writes and commits, then looks; the
holder lets go, then looks: whichever way their steps interleave, one of the two sees the
fact. In one statement or two, the holder may still
let go between the failed lock and the write (the write waits on the row while the
holder's drain has it locked) and look before the write commits: the worker's look, after
its commit, is the one that sees it.

**The lookers**, each running at most LOOK_UNITS units (a hot execution must not keep its
looker from everything else; a look cut there hands on what is left, below):

1. Every holder, after its commit: the lock registers the look (`_look_after`).
2. A unit of work takes that look over (`Look.taken`) and looks after its own on_commit
   work, its state cached and its messages sent (kernel/unit.py, `recheck`).
3. A worker that wrote its result into the inbox looks once more at once
   (services/attempts.py `_finish`): the lock may have been let go meanwhile.
4. A worker's lease keeper, SHOW_RUNNING_AFTER into an attempt that runs on, drains its
   claims too, so the attempt shows as running (worker/runtime.py `show_running`).
5. The end of a block (`looking_after`), only where its thread owes a look (below): a
   worker's message (worker/runtime.py `run_attempt`), and every transaction of the
   services that takes a lock (an API request's, a timer's, a child's notice, the
   sweeper's top-up, a result recorded outside a worker's message). This is the look of
   a holder whose transaction rolled back: Django runs no hook on a rollback, so the lock's
   own look (1), registered on_commit, is dropped with it.
6. A message a cut look sent (executions/tasks.py `look_inbox`, below).
7. The sweeper's inbox phase, every tick: the backstop for a looker that died, or a
   message lost (services/sweep.py `_drain_inboxes`).

**When a look is skipped.** A new execution's unit (no worker knows it yet). The units of a
look itself (`advance_pending`: the loop is the look, `recheck=False`). A unit whose worker
claimed its next attempt eagerly (`UnitOfWork.look_later`): it leaves the look to that
worker's next unit, its lease keeper or the end of its message (services/attempts.py
`_finish_locked`). The look at the end of a block, where none is owed (below).
A drain is skipped when the lock, taken without waiting, read the inbox
empty in its own SELECT (`Locked.inbox_waiting`); a lock that waited drains without
asking, its reading being from before the wait. A unit that drained the inbox must
commit: one that did not, in a transaction that did, is logged as the bug it is
(`Look.uncommitted`).

**The look at the end of a block.** A thread inside a block (`looking_after`: a worker's
message, a service's transaction; a block inside another is the outer one's) keeps the
executions whose lock it took and has not looked after since (kernel/handle.py
`looks_owed`): taking a lock owes a look (`_lock`), and a look of the thread's own run to
the end settles it (`look`: it found the inbox empty or the lock taken, within
LOOK_UNITS). At the end of the block, outside any transaction, it looks only at what it
still owes: an eager unit's execution whose next unit did not come (the last attempt lost
its lease, or stopped cancelled), a lock whose transaction rolled back (or whose
savepoint did: PostgreSQL lets go of a row lock taken in a savepoint rolled back to), a
look cut at LOOK_UNITS or that failed. A block that ends inside a transaction of its
caller's own looks once that commits; one that rolls back leaves it to the sweeper.
Why that loses nothing: a fact is owed a look by the holder whose lock its writer's look
found taken. A lock of this thread's is let go either with its look run after it (a
unit's own, `UnitOfWork` recheck; the lock's, `_look_after`: both are `after_commit`,
which settles) or without, and only without leaves the execution owed. A look settles
every lock the thread let go before it, not only its own: it starts after they were let
go, so it reads every fact written while they were held (each writer committed its write
before its look found the lock taken); what it cannot log because another holder has the
lock, that holder logs (it drains first, and looks once it lets go). So what is left owed
at the end is exactly what no look has covered. A worker that dies first leaves it to the
sweeper, as before. The common path owes nothing at its end and sends no statement there.

**A look cut at LOOK_UNITS.** Each unit of a look holds the lock, and the last one lets go
with no look after it: a result written while it ran, whose writer's look found it
holding the lock, is owed one. Inside a block the execution stays owed and the block's
end looks again. A look with no block around it (the lease keeper's, the sweeper's, the
block's own end, a lock's look after commit where no block is open) hands on (`hand_on`):
it asks whether a result waits (a statement on this path only) and, if one does, sends a
message that looks (`look_inbox`), whose look may be cut and hand on in turn. So a hot
execution's inbox waits for a broker hop, not for the sweeper's tick, and no thread is
kept by it past LOOK_UNITS units.

**Claims and results in the inbox.** A result is never ordered before its own claim,
whatever the worker's clock did; facts the log has moved past (a result for an attempt
cancelled while it waited) are dropped and the row set to what the log says. A timeout is
decided under the lock, after the inbox: a result that came first wins. One result per
attempt is the Attempt row's conditional UPDATE (running -> finished), whoever logs it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any
from uuid import UUID

from django.db import connection, transaction
from django.db.models import OuterRef

from executions import messages
from executions.kernel import inbox, prepared
from executions.kernel.handle import Locked, Look, looks_owed, owe, owing, settle
from executions.kernel.log import is_cached, load_state
from executions.kernel.unit import UnitOfWork
from executions.models import Execution
from workflows import logs

log = logging.getLogger(__name__)

#: At most this many units per look: a hot execution must not keep its looker (a request,
#: a worker between messages, the sweeper) from everything else. What is left, the end of
#: the looker's block or a message looks at ("A look cut at LOOK_UNITS" above).
LOOK_UNITS = 3


def lock_execution(execution_id: UUID | str) -> Locked:
    """The execution row, locked until the transaction ends. Call inside atomic()."""
    locked = _lock(execution_id, skip_locked=False)[0]
    assert locked is not None
    return locked


def try_lock_execution(execution_id: UUID | str) -> Locked | None:
    """lock_execution, or None at once if another transaction holds the lock: a worker
    then leaves its fact in the inbox (kernel/inbox.py) for that holder to log."""
    return _lock(execution_id, skip_locked=inbox.enabled())[0]


def try_lock_or_leave(
    execution_id: UUID | str, *, then: Then, otherwise: Then
) -> tuple[Locked | None, int]:
    """try_lock_execution, with two UPDATEs in the same statement: `then` runs if the lock
    is taken, `otherwise` if it is not (a worker's result: its attempt's row set under the
    lock, or written into the inbox). Exclusive: both are conditional on the one locked
    read. Returns the lock (None: not taken, `otherwise` ran) and the rows the UPDATE that
    ran changed. Where there is no inbox the lock waits: it is always taken, and `then`
    runs on its own after it."""
    locked, rows = _lock(execution_id, skip_locked=inbox.enabled(), then=then, otherwise=otherwise)
    if locked is not None and rows is None:
        with connection.cursor() as cursor:
            cursor.execute(*then)
            rows = cursor.rowcount
    assert rows is not None
    return locked, rows


#: An UPDATE ending in its WHERE clause, and its parameters.
Then = tuple[str, list[Any]]

#: The lock's SELECT, an UPDATE made conditional on its row and one conditional on its
#: absence, as one statement. The locked row is MATERIALIZED: read (and locked, or
#: skipped) once, whoever reads it, so exactly one of the two UPDATEs changes anything
#: (they may name the same row: PostgreSQL leaves a row changed twice in one statement
#: undefined, and this never does). One row comes back either way: the locked row and
#: the rows changed, or NULLs and the rows `otherwise` changed.
_LOCK_THEN = """
WITH locked AS MATERIALIZED ({lock}),
then_rows AS ({then} AND EXISTS (SELECT 1 FROM locked) RETURNING 1),
otherwise_rows AS ({otherwise} AND NOT EXISTS (SELECT 1 FROM locked) RETURNING 1)
SELECT locked.*, (SELECT COUNT(*) FROM then_rows) AS then_rows,
    (SELECT COUNT(*) FROM otherwise_rows) AS otherwise_rows
FROM (VALUES (1)) AS one (x) LEFT JOIN locked ON true
"""


def _lock(
    execution_id: UUID | str,
    *,
    skip_locked: bool,
    then: Then | None = None,
    otherwise: Then | None = None,
) -> tuple[Locked | None, int | None]:
    """The lock (None: skipped), and the rows `then` changed if it was taken, `otherwise`
    if not (None: neither ran, for want of an inbox or of the two)."""
    assert transaction.get_connection().in_atomic_block, "lock_execution needs atomic()"
    logs.bind(execution_id=execution_id)  # until the enclosing boundary or task ends
    lock, params = _lock_sql(execution_id, skip_locked=skip_locked)
    rows = None
    execution: Execution | None
    if skip_locked and then is not None and otherwise is not None:
        statement = _LOCK_THEN.format(lock=lock, then=then[0], otherwise=otherwise[0])
        # Prepared: its text is one per lock variant and caller (`_finish`'s two UPDATEs).
        with prepared.bound():
            found = next(iter(Execution.objects.raw(statement, [*params, *then[1], *otherwise[1]])))
        then_rows, otherwise_rows = (vars(found).pop(name) for name in _ROWS)
        execution = found if found.pk is not None else None
        rows = then_rows if execution is not None else otherwise_rows
    else:
        with prepared.bound():
            execution = next(iter(Execution.objects.raw(lock, params)), None)
        if execution is None and not skip_locked:
            raise Execution.DoesNotExist(f"no execution {execution_id}")
    if execution is None:
        return None, rows
    # Read off the row: the handle carries it, the model instance no attribute of the lock's.
    locked = Locked(execution, inbox_waiting=vars(execution).pop("inbox_waiting", True))
    if inbox.enabled():
        # Every holder looks at the inbox once it lets go: a worker that found the lock
        # taken wrote its fact and went on. A unit of work takes the look over. Owed by
        # this thread until a look of its own runs to the end (a worker's message).
        owe(str(execution_id))
        look = Look(str(execution_id), partial(after_commit, str(execution_id)))
        locked.look = look
        transaction.on_commit(partial(_look_after, look))
    return locked, rows


#: The counts _LOCK_THEN reads beside the row.
_ROWS = ("then_rows", "otherwise_rows")


#: The lock's SELECT as the ORM compiles it, by whether it defers the snapshot and skips a
#: locked row: the same text for every execution, its id one of the parameters (at the
#: index kept with it), compiled once per process and executed as it is, not built as a
#: queryset per unit (the compiler cost more than the statement's round trip, and the
#: queryset's building 0.22 ms a hop).
_LOCK_SQL: dict[tuple[str, bool, bool], tuple[str, list[Any], int]] = {}


def _lock_sql(execution_id: UUID | str, *, skip_locked: bool) -> tuple[str, list[Any]]:
    key = Execution._meta.pk.get_db_prep_value(execution_id, connection)
    deferred = is_cached(execution_id)
    variant = (connection.vendor, deferred, skip_locked)
    cached = _LOCK_SQL.get(variant)
    if cached is not None:
        text, params, at = cached
        return text, [*params[:at], key, *params[at + 1 :]]
    queryset = Execution.objects.all()
    if deferred:
        # The snapshot column is O(nodes) JSON; load_state will not need it.
        queryset = queryset.defer("snapshot")
    if skip_locked:
        # Whether the drain has anything to read, in the same round trip. A lock taken
        # without waiting reads it as of now; one that waited would read it as of before
        # the wait, and so drains without asking.
        queryset = queryset.annotate(inbox_waiting=inbox.waiting_for(OuterRef("pk")))
    if connection.features.has_select_for_update:
        queryset = queryset.select_for_update(skip_locked=skip_locked)
    # On SQLite the IMMEDIATE transaction already holds the database's write lock.
    text, compiled = queryset.filter(pk=execution_id).query.sql_with_params()
    params = list(compiled)
    if params.count(key) == 1:
        _LOCK_SQL[variant] = (text, params, params.index(key))
    return text, params


def _look_after(look: Look) -> None:
    if look.uncommitted:
        log.error("execution %s: a unit of work drained its inbox and was not committed",
                  look.execution_id)  # fmt: skip
    if not look.taken:
        look.run()


def after_commit(execution_id: str, *, claims: bool = False, wrote: bool = False) -> None:
    """The lock was let go: log what workers left meanwhile (`look`). Never raises into
    the caller (an API request, a worker's task): what fails here, the sweeper retries."""
    try:
        look(execution_id, claims=claims, wrote=wrote)
    except Exception:
        log.warning("draining the inbox of %s failed; the sweeper will", execution_id,
                    exc_info=True)  # fmt: skip


def look(execution_id: UUID | str, *, claims: bool = False, wrote: bool = False) -> int:
    """A look at the inbox: at most LOOK_UNITS units (advance_pending). Looked to the end
    (the inbox empty, or the lock taken by a holder that looks after it), it settles what
    this thread owes; cut, its last unit let go of the lock with no look after it, which
    the end of the thread's block takes (`looking_after`), or, outside one, a message
    (`hand_on`). `wrote`: the caller just wrote a result into the inbox (advance_pending's
    `wrote`). Returns the units; raises what they raise."""
    units = advance_pending(execution_id, claims=claims, limit=LOOK_UNITS, wrote=wrote)
    if units < LOOK_UNITS:
        # Nothing this thread let go of before is owed a look any more.
        settle(str(execution_id))
    elif not owing():
        hand_on(str(execution_id))
    return units


def hand_on(execution_id: str) -> None:
    """A look cut at LOOK_UNITS with no block to look again: if a result waits (one
    statement, on this path only), a message looks (executions/tasks.py look_inbox), so
    it waits for a broker hop, not for the sweeper's tick. Its look may be cut in turn and
    hand on again: a hot execution's inbox is looked at by one message at a time."""
    if inbox.waiting(execution_id):
        messages.publish_look(execution_id)


@contextmanager
def looking_after() -> Iterator[None]:
    """A block (a worker's message, a service's call) after whose end every lock its
    thread took in it has been looked after, whether its transaction committed or rolled
    back (Django has no on_rollback: a lock let go by a rollback registered no look) and
    whether a look was cut at LOOK_UNITS: at the end it looks at what it still owes
    (kernel/handle.py looks_owed), outside any transaction. Inside another block, the
    outer block's end does. Ending inside a transaction of the caller's own, it looks once
    that commits (one that rolls back leaves it to the sweeper)."""
    if owing():
        yield
        return
    owed: set[str] = set()
    try:
        with looks_owed() as owed:
            yield
    except Exception:
        _look_at(sorted(owed))  # a refusal, a failure: its rollback registered no look
        raise
    # Not on SystemExit and the like: the process is going, the sweeper looks.
    _look_at(sorted(owed))


def _look_at(execution_ids: Sequence[str]) -> None:
    """The end of a block's looks: now, or, inside a transaction of the caller's own, once
    it commits. Outside the block, so a look cut again hands on (`look`)."""
    if execution_ids and transaction.get_connection().in_atomic_block:
        # Once it commits, look whatever runs the hook: not _look_at again, which a hook
        # run inside a transaction (a TestCase's captureOnCommitCallbacks(execute=True))
        # would register anew for ever.
        transaction.on_commit(partial(_look_now, execution_ids))
        return
    _look_now(execution_ids)


def _look_now(execution_ids: Sequence[str]) -> None:
    for execution_id in execution_ids:
        after_commit(execution_id)


def advance_pending(
    execution_id: UUID | str,
    *,
    claims: bool = False,
    limit: int | None = None,
    wrote: bool = False,
) -> int:
    """Log and decide upon the inbox's results (`claims`: its claims too) while there are
    any, the lock is free and fewer than `limit` units ran. Taken: its holder looks at the
    inbox after its commit. Returns the number of units.

    `wrote`: the caller's own result is in the inbox, committed: the first look goes
    straight to the lock, whose statement reads the inbox itself (asking first would cost
    a round trip that answers yes all but always)."""
    units = 0
    asked = not wrote
    while (limit is None or units < limit) and (
        not asked or inbox.waiting(str(execution_id), claims=claims)
    ):
        asked = True
        with transaction.atomic():
            # This loop is the look after the commit: the lock does not schedule another.
            locked = try_lock_execution(execution_id)
            if locked is None:
                return units
            work = UnitOfWork(locked, load_state(locked.execution), recheck=False)
            if work.pending:  # another holder may have drained it first
                work.decide()
                work.commit(decided=True)
        units += 1
    return units
