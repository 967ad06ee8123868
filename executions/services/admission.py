"""Workflow-level concurrency: at most `limit` executions of a workflow per key value run
at once; the others are held (pending, no event yet) and admitted first-in first-out.

Counted in the database, so every worker, beat and API process agrees: admission for one
(workflow, key) runs under the lock of its ConcurrencyKey row, counts the key's running
executions (running, paused or cancelling: admitted and not ended), and starts the oldest
held ones as far as engine/admission.py decides. A held execution's start admits at once
where there is room; every ending (a held one's too: the next may fit where it did not)
sends `admit` after its commit (kernel/effects.py); the sweeper runs admission for held keys as
the backstop for a lost message. The queue's order is the time each joined it (held_at):
a start_at execution joins when its time comes, behind those that waited before it.

A start inside a transaction that may start others (an event's triggers, a schedule's
fires: `deferred()`) admits after its commit instead: taking several keys' locks in one
transaction, in an order the data decides, could deadlock two such transactions.

Lock order: the key's row first, then the Execution rows of the held executions it
admits, the one exception kernel/lock.py's lock order allows, and why it is safe.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial
from typing import Any
from uuid import UUID

from django.db import connection, transaction
from django.db.models import Count, OuterRef, Q, Subquery

from executions.definitions import definition_for
from executions.engine.admission import Held, to_admit
from executions.engine.events import Decision, EventType, Source
from executions.engine.statuses import ExecutionStatus
from executions.kernel.advance import begin
from executions.kernel.lock import lock_execution, looking_after
from executions.models import ConcurrencyKey, Execution
from executions.services.containment import TRANSIENT, contain
from workflows import clock
from workflows.dsl.concurrency import ConcurrencySpec

log = logging.getLogger(__name__)

#: Admitted and not ended: what counts against the limit.
RUNNING = (ExecutionStatus.RUNNING, ExecutionStatus.PAUSED, ExecutionStatus.CANCELLING)
#: Held executions read at a time: admission reads on while all it read could start.
QUEUE_READ = 100
#: The limit of a held execution whose version sets none (broken or edited by hand).
NO_LIMIT = 2**31 - 1

_deferred: ContextVar[bool] = ContextVar("admission_deferred", default=False)


def concurrency_of(version_id: int) -> ConcurrencySpec | None:
    return definition_for(version_id).concurrency


def hold(execution: Execution) -> None:
    """Mark an execution created earlier (start_at) as waiting for its key: it joins the
    queue's end now."""
    execution.held, execution.held_at = True, clock.now()
    execution.save(update_fields=["held", "held_at"])


@contextmanager
def deferred() -> Iterator[None]:
    """Held starts inside this block take no key lock: each admits after the commit."""
    token = _deferred.set(True)
    try:
        yield
    finally:
        _deferred.reset(token)


def admit_at_start(workflow_id: int, key: str) -> bool:
    """A held start's admission: now, under the key's lock (True), or after the commit
    inside `deferred()` (False; the sweeper is the backstop should that admission fail)."""
    if not _deferred.get():
        admit(workflow_id=workflow_id, key=key)
        return True
    transaction.on_commit(partial(admit, workflow_id=workflow_id, key=key), robust=True)
    return False


def held_start(reuse: list[Decision] | None, faults: Any) -> dict[str, Any] | None:
    """What begin() needs once the execution is admitted (Execution.held_start)."""
    start: dict[str, Any] = {}
    if reuse:
        start["reuse"] = [
            {"type": d.type, "node_id": d.node_id, "attempt": d.attempt, "data": d.data}
            for d in reuse
        ]
    if faults:
        start["faults"] = faults
    return start or None


def admit(*, workflow_id: int, key: str) -> int:
    """Start the held executions of (workflow, key) that fit now. Returns how many."""
    with looking_after(), transaction.atomic():
        lock_key(workflow_id, key)
        return _admit_locked(workflow_id, key)


def running_count(workflow_id: int, key: str) -> int:
    return Execution.objects.filter(
        workflow_id=workflow_id, concurrency_key=key, status__in=RUNNING
    ).count()


def queue(workflow_id: int, key: str, *, read: int = QUEUE_READ) -> list[Held]:
    """The key's held executions, first held first (the first `read`), each with its
    version's limit."""
    rows = (
        Execution.objects.filter(
            workflow_id=workflow_id, concurrency_key=key, held=True, status=ExecutionStatus.PENDING
        )
        .order_by("held_at", "id")
        .values_list("pk", "version_id")[:read]
    )
    return [Held(str(pk), _limit(version_id)) for pk, version_id in rows]


def ahead_of(execution: Execution) -> int:
    """How many held executions of its key wait ahead of this one."""
    earlier = Q(held_at__lt=execution.held_at) | Q(held_at=execution.held_at, pk__lt=execution.pk)
    return (
        Execution.objects.filter(
            workflow_id=execution.workflow_id,
            concurrency_key=execution.concurrency_key,
            held=True,
            status=ExecutionStatus.PENDING,
        )
        .filter(earlier)
        .count()
    )


def limit_of(execution_id: UUID | str) -> int:
    """The limit the execution's version sets for its key."""
    version_id = Execution.objects.values_list("version_id", flat=True).get(pk=execution_id)
    return _limit(version_id)


def _limit(version_id: int) -> int:
    try:
        spec = concurrency_of(version_id)
    except Exception:
        spec = None  # its definition no longer parses: let begin() fail it, contained
    return spec.limit if spec is not None else NO_LIMIT


def held_keys(
    *, after: tuple[int, str] | None, count: int, exclude: Sequence[str] = ()
) -> list[tuple[int, str, bool]]:
    """Up to `count` keys with held executions, in (workflow id, key) order after `after`,
    each with whether admission would start something now (read without the lock: the
    sweeper's cheap look before it takes it). One query, whatever the count."""
    held = Execution.objects.filter(held=True, status=ExecutionStatus.PENDING)
    same_key = {
        "workflow_id": OuterRef("workflow_id"),
        "concurrency_key": OuterRef("concurrency_key"),
    }
    head = held.filter(**same_key).order_by("held_at", "id").values("version_id")[:1]
    running = (
        Execution.objects.filter(**same_key, status__in=RUNNING)
        .order_by()
        .values("workflow_id")
        .annotate(n=Count("pk"))
        .values("n")
    )
    rows = held.exclude(pk__in=exclude)
    if after is not None:
        workflow_id, key = after
        rows = rows.filter(
            Q(workflow_id__gt=workflow_id) | Q(workflow_id=workflow_id, concurrency_key__gt=key)
        )
    page = (
        rows.order_by("workflow_id", "concurrency_key")
        .values("workflow_id", "concurrency_key")
        .annotate(held=Count("pk"))  # one row per key
        # No Coalesce over `running`: a function would join the GROUP BY, run per row.
        .annotate(head=Subquery(head), running=Subquery(running))
        .values_list("workflow_id", "concurrency_key", "head", "running")[:count]
    )
    return [
        (workflow_id, key, bool(to_admit(running or 0, [Held("", _limit(head))])))
        for workflow_id, key, head, running in page
    ]


def lock_key(workflow_id: int, key: str) -> None:
    """The key's row, locked until the transaction ends. Call inside atomic()."""
    # Created once per key, race-free (ON CONFLICT DO NOTHING), then locked; again if a
    # purge deleted it in between (services/purge.py forgets keys no execution uses).
    while True:
        ConcurrencyKey.objects.bulk_create(
            [ConcurrencyKey(workflow_id=workflow_id, key=key)], ignore_conflicts=True
        )
        rows = ConcurrencyKey.objects.filter(workflow_id=workflow_id, key=key)
        if connection.features.has_select_for_update:
            rows = rows.select_for_update()
        # On SQLite the IMMEDIATE transaction already holds the write lock.
        if rows.values_list("pk", flat=True).first() is not None:
            return


def _admit_locked(workflow_id: int, key: str) -> int:
    admitted = 0
    skip: set[str] = set()
    while True:
        waiting = [h for h in queue(workflow_id, key) if h.execution_id not in skip]
        chosen = to_admit(running_count(workflow_id, key), waiting)
        again = len(chosen) == len(waiting) == QUEUE_READ  # more may wait past the read
        for execution_id in chosen:
            started, unrecorded = _begin_held(execution_id)
            admitted += started
            # A start that failed ended its execution: the next one may take its place.
            again = again or not started
            if unrecorded:
                skip.add(execution_id)  # not even its failure was recorded: leave it
        if not again:
            return admitted


def _begin_held(execution_id: str) -> tuple[bool, bool]:
    """Admit one held execution in a savepoint: (started, could not even be failed)."""
    try:
        with transaction.atomic():
            locked = lock_execution(execution_id)
            execution = locked.execution
            if not execution.held or execution.status != ExecutionStatus.PENDING:
                return False, False  # cancelled (or admitted) meanwhile
            start = execution.held_start or {}
            execution.held, execution.held_start = False, None
            execution.save(update_fields=["held", "held_start"])
            reuse = [Decision(EventType(d["type"]), d["node_id"], d["attempt"], d["data"])
                     for d in start.get("reuse", ())]  # fmt: skip
            begin(locked, reuse, faults=start.get("faults"))
            return True, False
    except TRANSIENT:
        raise
    except Exception as exc:
        # Its start broke (a definition that no longer parses, say): it ends failed and
        # the key goes on with the next one.
        recorded = contain(exc, where="admission", execution_id=execution_id, source=Source.API)
        return False, not recorded
