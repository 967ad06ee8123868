"""Workflow-level concurrency: at most `limit` executions of a workflow per key value run
at once; the others are held (pending, no event yet) and admitted first-in first-out.

Counted in the database, so every worker, beat and API process agrees: admission for one
(workflow, key) runs under the lock of its ConcurrencyKey row, counts the key's running
executions (running, paused or cancelling: admitted and not ended), and starts the oldest
held ones as far as engine/admission.py decides. A held execution's start admits at once
where there is room; every ending of an admitted one sends `admit` after its commit
(effects.py); the sweeper runs admission for held keys as the backstop for a lost message.

Lock order: the key's row first, then the Execution rows of the held executions it
admits. Nothing takes a key lock while holding the lock of an execution another
transaction can see held (a start holds only its own new, uncommitted row; a retry takes
the key before its execution), so admission never waits on a lock held by a waiter.
"""

from __future__ import annotations

import logging
from typing import Any
from uuid import UUID

from django.db import connection, transaction
from django.db.models import Q

from executions import store
from executions.definitions import definition_for
from executions.engine.admission import Held, to_admit
from executions.engine.events import Decision, EventType, Source
from executions.engine.statuses import ExecutionStatus
from executions.models import ConcurrencyKey, Execution
from executions.services.containment import TRANSIENT, contain
from workflows.dsl.concurrency import ConcurrencySpec

log = logging.getLogger(__name__)

#: Admitted and not ended: what counts against the limit.
RUNNING = (ExecutionStatus.RUNNING, ExecutionStatus.PAUSED, ExecutionStatus.CANCELLING)
#: Held executions read at a time: admission reads on while all it read could start.
QUEUE_READ = 100
#: The limit of a held execution whose version sets none (broken or edited by hand).
NO_LIMIT = 2**31 - 1


def concurrency_of(version_id: int) -> ConcurrencySpec | None:
    return definition_for(version_id).concurrency


def hold(execution: Execution) -> None:
    """Mark an execution created earlier (start_at) as waiting for its key."""
    execution.held = True
    execution.save(update_fields=["held"])


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
    with transaction.atomic():
        lock_key(workflow_id, key)
        return _admit_locked(workflow_id, key)


def running_count(workflow_id: int, key: str) -> int:
    return Execution.objects.filter(
        workflow_id=workflow_id, concurrency_key=key, status__in=RUNNING
    ).count()


def queue(workflow_id: int, key: str, *, read: int = QUEUE_READ) -> list[Held]:
    """The key's held executions, oldest first (the first `read`), each with its
    version's limit."""
    rows = (
        Execution.objects.filter(
            workflow_id=workflow_id, concurrency_key=key, held=True, status=ExecutionStatus.PENDING
        )
        .order_by("created_at", "id")
        .values_list("pk", "version_id")[:read]
    )
    return [Held(str(pk), _limit(version_id)) for pk, version_id in rows]


def ahead_of(execution: Execution) -> int:
    """How many held executions of its key wait ahead of this one."""
    earlier = Q(created_at__lt=execution.created_at) | Q(
        created_at=execution.created_at, pk__lt=execution.pk
    )
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


def admission_due(workflow_id: int, key: str) -> bool:
    """Whether admission would start something, read without the lock (the sweeper's
    cheap look before it takes it)."""
    return bool(to_admit(running_count(workflow_id, key), queue(workflow_id, key, read=1)))


def lock_key(workflow_id: int, key: str) -> None:
    """The key's row, locked until the transaction ends. Call inside atomic()."""
    # Created once per key, race-free (ON CONFLICT DO NOTHING), then locked.
    ConcurrencyKey.objects.bulk_create(
        [ConcurrencyKey(workflow_id=workflow_id, key=key)], ignore_conflicts=True
    )
    rows = ConcurrencyKey.objects.filter(workflow_id=workflow_id, key=key)
    if connection.features.has_select_for_update:
        rows = rows.select_for_update()
    rows.get()  # on SQLite the IMMEDIATE transaction already holds the write lock


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
    from executions.services.start import begin

    try:
        with transaction.atomic():
            execution = store.lock_execution(execution_id)
            if not execution.held or execution.status != ExecutionStatus.PENDING:
                return False, False  # cancelled (or admitted) meanwhile
            start = execution.held_start or {}
            execution.held, execution.held_start = False, None
            execution.save(update_fields=["held", "held_start"])
            reuse = [Decision(EventType(d["type"]), d["node_id"], d["attempt"], d["data"])
                     for d in start.get("reuse", ())]  # fmt: skip
            begin(execution, reuse, faults=start.get("faults"))
            return True, False
    except TRANSIENT:
        raise
    except Exception as exc:
        # Its start broke (a definition that no longer parses, say): it ends failed and
        # the key goes on with the next one.
        recorded = contain(exc, where="admission", execution_id=execution_id, source=Source.API)
        return False, not recorded
