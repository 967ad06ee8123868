"""The inbox of facts workers could not log themselves (coalesced orchestration).

A worker that finds its execution's lock taken (store.try_lock_execution) writes its
claim or result into the attempt's row, `unlogged`, with one conditional UPDATE, and goes
on with its next message instead of queueing on the lock. Every unit of work under the
lock first drains the rows (`drain`: their facts become events, in the order they
happened, then one decision for all of them), and after its commit looks again
(`after_commit`): a worker that found the lock taken wrote its fact before it looked, so
the holder, looking after letting go, sees it. The sweeper drains what a crash between a
fact and that look left behind.

PostgreSQL only (SKIP LOCKED): on SQLite the write lock is the database's, and every
worker waits for it as before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from django.db import connection
from django.db.models import Exists, OuterRef

from executions.engine import inbox
from executions.engine.capacity import crowded
from executions.engine.events import Source
from executions.models import Attempt, AttemptStatus

if TYPE_CHECKING:
    from executions.store import UnitOfWork

log = logging.getLogger(__name__)

_COLUMNS = (
    "pk",
    "node_id",
    "attempt",
    "status",
    "worker_id",
    "claimed_at",
    "finished_at",
    "result",
)


def enabled() -> bool:
    return bool(connection.features.has_select_for_update_skip_locked)


def waiting(execution_id: str) -> bool:
    return Attempt.objects.filter(execution_id=execution_id, unlogged=True).exists()


def waiting_for(execution: OuterRef) -> Exists:
    """`waiting` as a subquery of the execution's own query (store.lock_execution)."""
    return Exists(Attempt.objects.filter(execution_id=execution, unlogged=True))


def drain(work: UnitOfWork) -> None:
    """Append the inbox's facts to the unit (inside the lock), and mark their rows logged."""
    execution = work.execution
    # A new execution has no attempts yet; a locked one says whether its inbox has any.
    if not enabled() or execution.last_seq == 0 or not getattr(execution, "inbox_waiting", True):
        return
    found = Attempt.objects.filter(execution=work.execution, unlogged=True)
    columns = found.values_list(*_COLUMNS, "published_at", "pool_id")
    rows, extra = [], {}
    for *values, published_at, pool_id in columns:
        rows.append(inbox.Row(*values))
        extra[values[0]] = (published_at, pool_id)
    if not rows:
        return
    state = work.state
    crowded_before = crowded(state, _cap())
    cancelled: list[int] = []
    for fact in inbox.facts(rows):
        if inbox.admits(state, fact):
            # Never before what the log already holds: its timestamps only go forward.
            at = max(fact.at, state.now) if state.now else fact.at
            work.append([fact.decision], source=Source.WORKER, at=at)
            work.now = max(work.now, at)
            published_at, pool_id = extra[fact.row.pk]
            if pool_id and fact.is_result:
                work.held.pools.add(pool_id)  # its slot is free: dispatch after commit
            elif not fact.is_result and published_at is not None and not pool_id:
                # One of its messages left the broker: room for a held attempt.
                work.claimed_published = work.claimed_published or crowded_before
        elif inbox.dropped_status(state, fact) == AttemptStatus.CANCELLED:
            cancelled.append(fact.row.pk)
    _mark_logged(rows, cancelled)


def _mark_logged(rows: list[inbox.Row], cancelled: list[int]) -> None:
    """Clear the rows' flag, each only in the status it was read in: a worker's result
    written since (the row's status moved on) stays in the inbox for the next unit."""
    by_status: dict[str, list[int]] = {}
    for row in rows:
        by_status.setdefault(row.status, []).append(row.pk)
    for status, pks in by_status.items():
        Attempt.objects.filter(pk__in=pks, status=status, unlogged=True).update(
            unlogged=False, result=None
        )
    if cancelled:
        Attempt.objects.filter(pk__in=cancelled).update(status=AttemptStatus.CANCELLED)


def _cap() -> int:
    from executions.services.capacity import in_flight_cap

    return in_flight_cap()


def after_commit(execution_id: str) -> None:
    """A unit let go of the lock: log what workers left meanwhile. Never raises into the
    committer (an API request, a worker's task): what fails here, the sweeper retries."""
    try:
        _advance()(execution_id)
    except Exception:
        log.warning("draining the inbox of %s failed; the sweeper will", execution_id,
                    exc_info=True)  # fmt: skip


def _advance() -> Callable[[str], int]:
    # services.advance builds units of work (store), which call back here.
    from executions.services.advance import advance_pending

    return advance_pending
