"""A worker's side of an attempt: claim, renew the lease, record exactly one result.

Every result passes `recordable` first (secrets masked, NaN refused, size bounded).

Every step is one conditional UPDATE on the Attempt row; zero rows updated means the
attempt is no longer this worker's (a duplicate message, a timeout, a cancel) and the
worker drops what it has. The result event's unique constraint is the last backstop.
"""

from __future__ import annotations

import json
from contextlib import nullcontext
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Field, Q

from executions.definitions import definition_for
from executions.engine.context import template_context
from executions.engine.errors import ErrorRecord
from executions.engine.events import Decision, EventType, Source
from executions.engine.faults import faults_for
from executions.engine.payloads import TaskRateLimited, TaskStarted, decided, to_json
from executions.engine.statuses import ExecutionStatus
from executions.kernel import inbox, prepared
from executions.kernel.advance import record_and_decide
from executions.kernel.capacity import pool_admits, pool_of
from executions.kernel.handle import Locked
from executions.kernel.lock import (
    Then,
    after_commit,
    lock_execution,
    looking_after,
    try_lock_or_leave,
)
from executions.kernel.log import load_state
from executions.kernel.rates import rate_key_of, rate_refuses
from executions.kernel.unit import UnitOfWork
from executions.models import Attempt, AttemptStatus, Execution
from executions.services.recorded import recordable
from executions.sqlnames import column, sql
from nodes.context import Claimed
from nodes.secrets import secret_names, template_of
from workflows import clock
from workflows.conf import engine_settings
from workflows.dsl import Node


def lease_seconds_for(node: Node) -> float:
    return float(node.heartbeat_timeout_seconds or engine_settings.DEFAULT_LEASE_SECONDS)


def attempt_claim(*, attempt_id: int, worker_id: str) -> Claimed | None:
    if inbox.enabled():
        claimed = _claim_in_one(attempt_id, worker_id)
        if claimed is not None:
            return claimed
    # Only a scheduled attempt can be claimed: a duplicate or republished message for
    # a claimed one is dropped here, without queueing on the execution's lock.
    row = (
        Attempt.objects.filter(pk=attempt_id, status=AttemptStatus.SCHEDULED)
        .values(*_CLAIM_COLUMNS)
        .first()
    )
    if row is None:
        return None
    if row["payload"] is not None and inbox.enabled():
        # It needs nothing of the state: claimed with one UPDATE, no lock, and its
        # task_started logged by the next unit of work, mostly its own result's.
        return _claim_unlocked(attempt_id, row, worker_id)
    with looking_after(), transaction.atomic():
        return _claim_locked(lock_execution(row["execution_id"]), attempt_id, row, worker_id)


_CLAIM_COLUMNS = (
    "execution_id",
    "node_id",
    "attempt",
    "pool_id",
    "published_at",
    "payload",
    "execution__status",
    "execution__version_id",
)


def _claim_locked(
    locked: Locked, attempt_id: int, row: dict[str, Any], worker_id: str
) -> Claimed | None:
    """The claim under the execution's lock: task_started goes straight into the log."""
    execution = locked.execution
    if execution.status == ExecutionStatus.PAUSED:
        return None  # held, still scheduled: execution_resume publishes it again
    work = UnitOfWork(locked, load_state(execution))
    caught_up = execution.decided_seq == execution.last_seq
    if work.pending:
        # Results other workers left in the inbox: decided upon before this claim.
        work.decide()
        caught_up = True
    # Only past its cap can an execution have attempts held for want of room.
    crowded_before = work.crowded()
    pool = pool_of(row["pool_id"])
    claimed = _claim_into(work, attempt_id, row["node_id"], row["attempt"], worker_id, pool)
    if claimed is not None or work.pending:
        if claimed is not None:
            # One of the execution's messages left the broker: room for a held attempt.
            published = row["published_at"] is not None
            work.made_room(published=published, pool=pool, crowded_before=crowded_before)
        work.commit(decided=caught_up)  # task_started asks for no decision
    return claimed


def _claim_unlocked(attempt_id: int, row: dict[str, Any], worker_id: str) -> Claimed | None:
    """scheduled -> running with one conditional UPDATE, the claim left in the row (the
    inbox) for the next unit of work to log, stamped with claimed_at: the result's, or
    the sweeper's within a tick for an attempt that runs on (kernel/inbox.py)."""
    if row["execution__status"] == ExecutionStatus.PAUSED:
        return None  # held, still scheduled: execution_resume publishes it again
    node = definition_for(row["execution__version_id"]).node_for(row["node_id"])
    now = clock.now()
    if not _take(attempt_id, node, worker_id, now, unlogged=True):
        return None  # taken by another, or its execution paused since the SELECT
    return Claimed(
        attempt_id=attempt_id,
        execution_id=str(row["execution_id"]),
        node=node,
        attempt=row["attempt"],
        input=row["payload"]["input"],
        lease_seconds=lease_seconds_for(node),
    )


#: _claim_unlocked's SELECT and UPDATE as one statement, with the default lease: an
#: attempt whose claim needs nothing of the state (its payload), of an execution not
#: paused. The payload is read as it was (the UPDATE clears it); its row is locked as it
#: is read, so a duplicate claim waits, then finds it running and takes nothing.
_CLAIM_IN_ONE = sql(
    """
UPDATE {a} AS a SET {a.status} = '{running}', {a.worker_id} = %s, {a.claimed_at} = %s,
    {a.lease_expires_at} = %s, {a.deadline_at} = NULL, {a.payload} = NULL,
    {a.unlogged} = true
FROM (
    SELECT {a.id}, {a.payload} FROM {a}
    WHERE {a.id} = %s AND {a.status} = '{scheduled}' AND {a.payload} IS NOT NULL
    FOR UPDATE
) AS old, {e} AS e
WHERE a.{a.id} = old.{a.id} AND a.{a.status} = '{scheduled}' AND e.{e.id} = a.{a.execution}
    AND e.{e.status} <> '{paused}'
RETURNING a.{a.execution}, a.{a.node_id}, a.{a.attempt}, e.{e.version}, old.{a.payload}
""",
    a=Attempt,
    e=Execution,
    running=AttemptStatus.RUNNING.value,
    scheduled=AttemptStatus.SCHEDULED.value,
    paused=ExecutionStatus.PAUSED.value,
)


def _claim_in_one(attempt_id: int, worker_id: str) -> Claimed | None:
    """The common claim (no lock, its task_started left in the inbox) in one statement;
    None where it does not apply (its claim needs the state, its execution is paused, it
    is no longer scheduled): attempt_claim then reads the row and decides."""
    now = clock.now()
    default = engine_settings.DEFAULT_LEASE_SECONDS
    with prepared.bound(), connection.cursor() as cursor:
        cursor.execute(
            _CLAIM_IN_ONE, [worker_id, now, now + timedelta(seconds=default), attempt_id]
        )
        row = cursor.fetchone()
    if row is None:
        return None
    execution_id, node_id, attempt, version_id, payload = row
    node = definition_for(version_id).node_for(node_id)
    if lease_seconds_for(node) != default or node.timeout_seconds:
        _lease(attempt_id, node, now)
    # jsonb comes back as text through Django's cursor (its JSONField parses it).
    payload = json.loads(payload) if isinstance(payload, str) else payload
    return Claimed(
        attempt_id=attempt_id,
        execution_id=str(execution_id),
        node=node,
        attempt=attempt,
        input=payload["input"],
        lease_seconds=lease_seconds_for(node),
    )


def _take(attempt_id: int, node: Node, worker_id: str, now: datetime, *, unlogged: bool) -> bool:
    """The claim's one conditional UPDATE: the hand-off, whoever holds the lock. Without
    the lock (`unlogged`), the same statement checks its execution is not paused."""
    mine = Attempt.objects.filter(pk=attempt_id, status=AttemptStatus.SCHEDULED)
    if unlogged:
        mine = mine.exclude(execution__status=ExecutionStatus.PAUSED)
    return bool(
        mine.update(
            status=AttemptStatus.RUNNING,
            worker_id=worker_id,
            claimed_at=now,
            payload=None,  # needed no more: the table stays slim
            unlogged=unlogged,
            **_lease_fields(node, now),
        )
    )


def _lease_fields(node: Node, now: datetime) -> dict[str, datetime | None]:
    """A claimed attempt's lease, and its deadline if the node has a timeout."""
    timeout = node.timeout_seconds
    return {
        "lease_expires_at": now + timedelta(seconds=lease_seconds_for(node)),
        "deadline_at": now + timedelta(seconds=timeout) if timeout else None,
    }


def _claim_into(
    work: UnitOfWork,
    attempt_id: int,
    node_id: str,
    attempt: int,
    worker_id: str,
    pool: str | None,
) -> Claimed | None:
    """scheduled -> running with one conditional UPDATE, and task_started appended to the
    unit (the caller commits it). Inside the lock. A pool node passes the pool's gate
    first; refused, it is held again and None is returned."""
    if pool:
        if not pool_admits(pool, attempt_id):
            return None
        # Taken under the pool's lock, after its count: a slot's previous holder recorded
        # its result before that count saw it gone, so [task_started, result] intervals
        # read from the logs never overlap more than the pool's slots.
        work.restamp()
    node = definition_for(work.execution.version_id).node_for(node_id)
    if node.rate_limit is not None:
        key = rate_key_of(work.execution, work.state, node)
        if key is not None:
            refused = rate_refuses(key, node.rate_limit, attempt_id)
            if refused is not None:
                if refused.first:
                    fact = TaskRateLimited(key=key, until=refused.until)
                    waits = decided(EventType.TASK_RATE_LIMITED, fact, node.id, attempt)
                    work.append([waits], source=Source.WORKER)
                return None
            # Stamped after the token was taken: task_started times read from the logs
            # keep within the limit.
            work.restamp()
    if not _take(attempt_id, node, worker_id, work.now, unlogged=False):
        return None
    return _started(work, attempt_id, node, attempt, worker_id)


def _started(
    work: UnitOfWork, attempt_id: int, node: Node, attempt: int, worker_id: str
) -> Claimed:
    """task_started appended to the unit for an attempt claimed inside the lock."""
    state = work.state
    started = decided(EventType.TASK_STARTED, TaskStarted(worker=worker_id), node.id, attempt)
    work.append([started], source=Source.WORKER)
    return Claimed(
        attempt_id=attempt_id,
        execution_id=str(work.execution.pk),
        node=node,
        attempt=attempt,
        input=state.nodes[node.id].input,
        lease_seconds=lease_seconds_for(node),
        context=template_context(state) if secret_names(template_of(node)) else None,
        faults={f.fault: to_json(f) for f in faults_for(state.faults, node.id, attempt)},
    )


def attempt_renew(*, attempt_id: int, worker_id: str, lease_seconds: float) -> bool:
    """Extend the lease. False: the attempt was cancelled or timed out; stop working on it."""
    now = clock.now()
    return bool(
        Attempt.objects.filter(
            pk=attempt_id, status=AttemptStatus.RUNNING, worker_id=worker_id
        ).update(lease_expires_at=now + timedelta(seconds=lease_seconds))
    )


def attempt_abandon(*, attempt_id: int, worker_id: str) -> bool:
    """Fault injection's crash: the worker lets go of a running attempt without a result,
    its lease ended now rather than when it would have lapsed, so the sweeper's next pass
    times it out (and the retry policy decides), as it would after a real crash."""
    return bool(
        Attempt.objects.filter(
            pk=attempt_id, status=AttemptStatus.RUNNING, worker_id=worker_id
        ).update(lease_expires_at=clock.now())
    )


def attempt_park(*, attempt_id: int, worker_id: str) -> bool:
    """Drop the lease of an attempt that waits on something with its own liveness (a child
    execution). The sweeper times it out only by timeout_seconds from then on."""
    return bool(
        Attempt.objects.filter(
            pk=attempt_id, status=AttemptStatus.RUNNING, worker_id=worker_id
        ).update(lease_expires_at=None)
    )


def attempt_complete_and_claim_next(
    *, attempt_id: int, worker_id: str, output: Any, claimed: Claimed | None = None
) -> Claimed | None:
    """Record a success and, in the same transaction, claim the execution's oldest scheduled
    attempt for this worker (eager dispatch: the next node of a chain starts without a
    broker round trip or a second lock). None: nothing claimed (or the result refused)."""
    return _finish(
        attempt_id,
        worker_id,
        AttemptStatus.SUCCEEDED,
        EventType.TASK_COMPLETED,
        {"output": output},
        Source.WORKER,
        claim_next_for=worker_id,
        known=claimed,
    )[1]


def attempt_complete(
    *, attempt_id: int, worker_id: str, output: Any, claimed: Claimed | None = None
) -> bool:
    return _finish(
        attempt_id,
        worker_id,
        AttemptStatus.SUCCEEDED,
        EventType.TASK_COMPLETED,
        {"output": output},
        Source.WORKER,
        known=claimed,
    )[0]


def attempt_fail(
    *, attempt_id: int, worker_id: str, error: dict[str, Any], claimed: Claimed | None = None
) -> bool:
    return _finish(
        attempt_id,
        worker_id,
        AttemptStatus.FAILED,
        EventType.TASK_FAILED,
        {"error": error},
        Source.WORKER,
        known=claimed,
    )[0]


def attempt_record_in_transaction(
    *,
    claimed: Claimed,
    worker_id: str,
    output: Any = None,
    error: dict[str, Any] | None = None,
    claim_next: bool = False,
) -> tuple[bool, Claimed | None]:
    """A transactional function's result (its `error` if it failed), recorded inside the
    caller's transaction, which holds the function's writes: (recorded, the attempt claimed
    next). Not recorded: the caller rolls back, writes and all. Its data says
    `"transactional": true`."""
    assert transaction.get_connection().in_atomic_block, "the function's transaction"
    if error is None:
        status, event_type, data = AttemptStatus.SUCCEEDED, EventType.TASK_COMPLETED, "output"
    else:
        status, event_type, data = AttemptStatus.FAILED, EventType.TASK_FAILED, "error"
    return _finish(
        claimed.attempt_id,
        worker_id,
        status,
        event_type,
        {data: output if error is None else error, "transactional": True},
        Source.WORKER,
        claim_next_for=worker_id if claim_next else None,
        known=claimed,
    )


def attempt_stalled(*, attempt_id: int, worker_id: str, seconds: float) -> bool:
    """The worker's verdict on its own attempt whose function made no progress (called
    ctx.heartbeat()) for heartbeat_timeout_seconds, though its process is alive."""
    message = (
        f"no ctx.heartbeat() for {seconds:g} s (heartbeat_timeout_seconds): "
        "the function made no progress"
    )
    error = ErrorRecord(type="HeartbeatTimeout", message=message, retryable=True).to_json()
    return _finish(
        attempt_id,
        worker_id,
        AttemptStatus.TIMED_OUT,
        EventType.TASK_TIMED_OUT,
        {"error": error},
        Source.WORKER,
    )[0]


#: Why an attempt whose own timeout_seconds passed was timed out (by whoever saw it first).
DEADLINE_PASSED = "timeout_seconds passed before the attempt finished"


def attempt_time_out(*, attempt_id: int, reason: str) -> bool:
    """The sweeper's verdict on an attempt whose lease or deadline passed, and still has:
    a renewal that came in since the sweeper looked wins (its worker is alive)."""
    error = ErrorRecord(type="Timeout", message=reason, retryable=True).to_json()
    now = clock.now()
    return _finish(
        attempt_id,
        None,
        AttemptStatus.TIMED_OUT,
        EventType.TASK_TIMED_OUT,
        {"error": error},
        Source.SWEEPER,
        only_if=Q(lease_expires_at__lt=now) | Q(deadline_at__lt=now),
    )[0]


def _claim_next(work: UnitOfWork, worker_id: str) -> Claimed | None:
    """Eager dispatch: the execution's oldest held attempt without a pool, claimed by the
    worker that just finished one. No message was spent on it and none will be. Attempts
    in the broker are left to their messages (claimed here, each would leave a message
    behind that no one needs), and held pool attempts to their pool's dispatch.

    One statement picks and claims it, with the default lease; a node with a lease or a
    timeout of its own gets them with a second, in the same transaction (no one sees the
    first). On PostgreSQL the attempt the unit held for this claim was mostly claimed in
    its own INSERT already (_insert_claimed): this is then for an older held one.

    Not while work of a higher priority waits (in the same statement, no round trip
    more): the worker then hands back to the broker, which serves the highest priority
    first, and the attempt held for it is published by the commit's top-up (a chain ran
    past a priority-9 start for up to 100 hops)."""
    now = work.now
    default = engine_settings.DEFAULT_LEASE_SECONDS
    adapt = connection.ops.adapt_datetimefield_value
    with prepared.bound(), connection.cursor() as cursor:
        cursor.execute(
            _TAKE_NEXT,
            [
                worker_id,
                adapt(now),
                adapt(now + timedelta(seconds=default)),
                _db(work.execution),
                work.execution.priority,
            ],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    attempt_id, node_id, attempt = row
    node = definition_for(work.execution.version_id).node_for(node_id)
    if lease_seconds_for(node) != default or node.timeout_seconds:
        _lease(attempt_id, node, now)
    work.took_held()
    return _started(work, attempt_id, node, attempt, worker_id)


# NOT EXISTS: a running execution of a higher priority with an attempt waiting for a
# worker, in the broker or held by its in-flight cap (its messages are then in the
# broker); not one held by its pool (a hand-back makes no slot). One InitPlan over the few
# running executions, each probed by attempt_waiting_idx; never true at priority 9.
# Its one parameter: the claiming execution's priority.
_NONE_HIGHER_WAITS = sql(
    """
NOT EXISTS (
    SELECT 1 FROM {e} e
    WHERE e.{e.status} = '{execution_running}' AND e.{e.priority} > %s
        AND EXISTS (
            SELECT 1 FROM {a} w
            WHERE w.{a.execution} = e.{e.id} AND w.{a.status} = '{scheduled}'
                AND (w.{a.published_at} IS NOT NULL OR w.{a.pool} IS NULL)
        )
)
""",
    a=Attempt,
    e=Execution,
    scheduled=AttemptStatus.SCHEDULED.value,
    execution_running=ExecutionStatus.RUNNING.value,
).strip()

#: An execution's held attempts an eager claim may take (its parameter: the execution):
#: not in the broker, not a pool's (its dispatch's), not a rate limit's (its bucket's).
_HELD = sql(
    """
SELECT {a.id} FROM {a}
WHERE {a.execution} = %s AND {a.status} = '{scheduled}' AND {a.published_at} IS NULL
    AND {a.pool} IS NULL AND {a.rate_key} IS NULL
""",
    a=Attempt,
    scheduled=AttemptStatus.SCHEDULED.value,
).strip()

_TAKE_NEXT = sql(
    """
UPDATE {a} SET {a.status} = '{running}', {a.worker_id} = %s, {a.claimed_at} = %s,
    {a.lease_expires_at} = %s, {a.deadline_at} = NULL, {a.payload} = NULL,
    {a.unlogged} = false
WHERE {a.status} = '{scheduled}' AND {a.id} = (
    {held} AND {none_higher_waits}
    ORDER BY {a.scheduled_at}, {a.id} LIMIT 1
)
RETURNING {a.id}, {a.node_id}, {a.attempt}
""",
    a=Attempt,
    running=AttemptStatus.RUNNING.value,
    scheduled=AttemptStatus.SCHEDULED.value,
    held=_HELD,
    none_higher_waits=_NONE_HIGHER_WAITS,
)


#: An attempt claim takes: what its row holds once claimed (the others as scheduled).
_CLAIMED_FIELDS = (
    "status",
    "worker_id",
    "claimed_at",
    "lease_expires_at",
    "deadline_at",
    "payload",
    "unlogged",
)

#: The attempt held for an eager claim (kernel/effects.py Held.first), inserted already
#: claimed when _TAKE_NEXT would have claimed it, else held as it was scheduled: one
#: statement where the INSERT and the UPDATE were two. _TAKE_NEXT claims the oldest held
#: attempt if no higher priority waits; the new row is the oldest exactly when no other
#: is held (`alone`, read in the same snapshot, before the INSERT: the lock keeps any
#: other from being inserted meanwhile), and the priority check (`free`) is the same
#: NOT EXISTS, evaluated in the statement that claims, as before. Not alone: the row goes
#: in held and _TAKE_NEXT picks, as before. Built per process from the model's fields
#: (casts from their column types: the values are parameters, unknown-typed in a CASE).
_INSERT_CLAIMED = """
WITH pick AS MATERIALIZED (
    SELECT NOT EXISTS ({held}) AS alone, {none_higher_waits} AS free
),
inserted AS (
    INSERT INTO {table} ({columns})
    SELECT {values} FROM pick
    RETURNING {id}, {status}
)
SELECT inserted.{id}, inserted.{status} = '{running}', pick.alone
FROM inserted, pick
"""

#: Each parameter of the statement: its field, and whether it is the value once claimed.
_Params = list[tuple["Field[Any, Any]", bool]]


@cache
def _insert_claimed_sql() -> tuple[str, _Params]:
    """The statement, and the fields whose values its parameters are, in order."""
    fields = [f for f in Attempt._meta.concrete_fields if not f.primary_key]
    columns: list[str] = []
    values: list[str] = []
    names: _Params = []
    for field in fields:
        cast = f"CAST(%s AS {field.db_type(connection)})"
        columns.append(connection.ops.quote_name(field.column))
        if field.name in _CLAIMED_FIELDS:
            values.append(f"CASE WHEN pick.alone AND pick.free THEN {cast} ELSE {cast} END")
            names += [(field, True), (field, False)]
        else:
            values.append(cast)
            names.append((field, False))
    text = _INSERT_CLAIMED.format(
        held=_HELD,
        none_higher_waits=_NONE_HIGHER_WAITS,
        table=connection.ops.quote_name(Attempt._meta.db_table),
        columns=", ".join(columns),
        values=",\n        ".join(values),
        id=column(Attempt, "id"),
        status=column(Attempt, "status"),
        running=AttemptStatus.RUNNING.value,
    )
    return text, names


def _insert_claimed(work: UnitOfWork, row: Attempt, worker_id: str) -> tuple[Claimed | None, bool]:
    """Eager dispatch's claim of the attempt `row` its unit held for it, inserted claimed
    (_INSERT_CLAIMED): (the claim or None, whether an older held attempt may be taken
    instead: _claim_next then picks, as it always did)."""
    node = definition_for(work.execution.version_id).node_for(row.node_id)
    now = work.now
    claimed = {
        "status": AttemptStatus.RUNNING.value,
        "worker_id": worker_id,
        "claimed_at": now,
        "payload": None,
        "unlogged": False,
        **_lease_fields(node, now),
    }
    text, names = _insert_claimed_sql()
    params: list[Any] = []
    for field, once_claimed in names:
        value = claimed[field.name] if once_claimed else getattr(row, field.attname)
        params.append(field.get_db_prep_save(value, connection))
    where = [_db(work.execution), work.execution.priority]
    with prepared.bound(), connection.cursor() as cursor:
        cursor.execute(text, [*where, *params])
        attempt_id, taken, alone = cursor.fetchone()
    row.pk = attempt_id
    if not taken:
        # Held. Alone: a higher priority waits, the worker hands back to the broker and
        # the commit's top-up publishes this one. Not alone: an older held one may go first.
        return None, not alone
    work.took_held()
    return _started(work, attempt_id, node, row.attempt, worker_id), False


def _db(execution: Execution) -> Any:
    """The execution's key as the database stores it (SQLite: hex text)."""
    return Execution._meta.pk.get_db_prep_value(execution.pk, connection)


def _lease(attempt_id: int, node: Node, now: datetime) -> None:
    Attempt.objects.filter(pk=attempt_id).update(**_lease_fields(node, now))


def _finish(
    attempt_id: int,
    worker_id: str | None,
    status: AttemptStatus,
    event_type: EventType,
    data: dict[str, Any],
    source: Source,
    only_if: Q | None = None,
    claim_next_for: str | None = None,
    known: Claimed | None = None,
) -> tuple[bool, Claimed | None]:
    """Record the attempt's one result and advance: (recorded, the next attempt claimed for
    `claim_next_for`). Not recorded: refused, not this attempt's turn. `known`: the
    worker's claim of it, which names its execution, node, attempt and pool."""
    # The one gate for what a worker writes: secrets masked, NaN and oversized outputs
    # turned into the node's failure (executions/services/recorded.py).
    recorded_type, data = recordable(event_type, data)
    if recorded_type != event_type:
        status, event_type = AttemptStatus.FAILED, recorded_type
    if known is not None:  # the worker's own claim says it: no query
        row: dict[str, Any] | None = {
            "execution_id": known.execution_id,
            "pool_id": known.node.pool,  # copied from the same definition when scheduled
            "node_id": known.node.id,
            "attempt": known.attempt,
        }
    else:
        columns = ("execution_id", "pool_id", "node_id", "attempt")
        row = Attempt.objects.filter(pk=attempt_id).values(*columns).first()
    if row is None:
        return False, None
    result = Decision(event_type, row["node_id"], row["attempt"], data)
    # A worker's own result never waits for the lock: taken, it goes into the inbox
    # (kernel/inbox.py), in the same statement. A verdict on someone else's attempt (a
    # timeout) is taken under the lock, after the inbox: a result that came first wins.
    # Every lock let go is looked after, committed or rolled back (kernel/lock.py). One
    # that claims its next attempt is a worker's message, whose own block does that.
    after = looking_after() if claim_next_for is None else nullcontext()
    try:
        with after, transaction.atomic():
            if worker_id is not None:
                # The result's own UPDATE goes with the lock: the row set if the lock is
                # taken, the row set and the result written into the inbox if not.
                now = clock.now()
                locked, rows = try_lock_or_leave(
                    row["execution_id"],
                    then=_finished(attempt_id, worker_id, status, now),
                    otherwise=_left(attempt_id, worker_id, status, now, data),
                )
                if not rows:
                    return False, None  # not this worker's attempt any more
            else:
                locked = lock_execution(row["execution_id"])
                # Built here only: a worker's result (above) has its UPDATE written out.
                mine = Attempt.objects.filter(pk=attempt_id, status=AttemptStatus.RUNNING)
                if only_if is not None:
                    mine = mine.filter(only_if)
                if not mine.update(status=status, finished_at=clock.now()):
                    return False, None
            if locked is not None:
                return _finish_locked(locked, row, result, source, claim_next_for)
            # Written, then looked: the holder looks after it lets go, so one of the two
            # sees it, whichever order their steps interleave in. The look runs once the
            # write is committed (inside a caller's transaction, a transactional
            # function's, once that commits).
            execution_id = str(row["execution_id"])
            transaction.on_commit(lambda: after_commit(execution_id, wrote=True))
            return True, None
    except IntegrityError:
        # The constraint saw a second result for this attempt: someone recorded it first.
        return False, None


#: A worker's result on its attempt's row: running -> its status, if still this worker's.
_FINISHED = sql(
    """
UPDATE {a} SET {a.status} = %s, {a.finished_at} = %s
WHERE {a.id} = %s AND {a.status} = '{running}' AND {a.worker_id} = %s
""",
    a=Attempt,
    running=AttemptStatus.RUNNING.value,
)


def _finished(attempt_id: int, worker_id: str, status: AttemptStatus, now: datetime) -> Then:
    adapt = connection.ops.adapt_datetimefield_value
    return _FINISHED.strip(), [status.value, adapt(now), attempt_id, worker_id]


#: The same, with the result written into the row for the lock's holder (the inbox).
_LEFT = sql(
    """
UPDATE {a} SET {a.status} = %s, {a.finished_at} = %s, {a.result} = %s, {a.unlogged} = true
WHERE {a.id} = %s AND {a.status} = '{running}' AND {a.worker_id} = %s
""",
    a=Attempt,
    running=AttemptStatus.RUNNING.value,
)


def _left(
    attempt_id: int, worker_id: str, status: AttemptStatus, now: datetime, data: dict[str, Any]
) -> Then:
    adapt = connection.ops.adapt_datetimefield_value
    result = Attempt._meta.get_field("result").get_db_prep_save(data, connection)
    return _LEFT.strip(), [status.value, adapt(now), result, attempt_id, worker_id]


def _finish_locked(
    locked: Locked,
    row: dict[str, Any],
    result: Decision,
    source: Source,
    claim_next_for: str | None,
) -> tuple[bool, Claimed | None]:
    """The result under the execution's lock, its attempt's row already set: logged and
    decided upon in one unit."""
    work = record_and_decide(locked, [result], source=source)
    work.freed_slot(row["pool_id"])
    nxt = None
    if claim_next_for is not None and not work.state.paused:
        # The next attempt is claimed in the same unit: one INSERT of the events,
        # one UPDATE of the execution and of each task, for both steps. On PostgreSQL
        # the attempt held for this claim is inserted already claimed where it may be.
        in_one = connection.vendor == "postgresql"
        first = work.apply_effects(eager=True, defer=in_one)  # the attempts just scheduled
        older = True  # whether an attempt held before may come first: the UPDATE picks
        if first is not None:
            nxt, older = _insert_claimed(work, first, claim_next_for)
        if nxt is None and older and work.may_hold():
            nxt = _claim_next(work, claim_next_for)
    if nxt is not None:
        # This worker comes back with the next unit as soon as nxt is done (or its lease
        # keeper does, if nxt runs on: executions/worker/runtime.py show_running): what
        # others leave in the inbox meanwhile goes in with it, not in a unit of its own.
        work.look_later()
    work.commit(decided=True)
    return True, nxt
