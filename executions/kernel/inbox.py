"""The inbox of facts workers could not log themselves (coalesced orchestration).

A worker that finds its execution's lock taken (lock.try_lock_execution) writes its
claim or result into the attempt's row, `unlogged`, with one conditional UPDATE (a result's
in the failed lock's own statement: lock.try_lock_or_leave), and goes on with its next
message instead of queueing on the lock. Every unit of work under the
lock first drains the rows (`drain`: their facts become events, in the order they
happened, then one decision for all of them), and after its commit looks again
(lock.after_commit): a worker that found the lock taken wrote its fact before it looked, so
the holder, looking after letting go, sees it. The sweeper drains what a crash between a
fact and that look left behind. The protocol as a whole: kernel/lock.py.

PostgreSQL only (SKIP LOCKED): on SQLite the write lock is the database's, and every
worker waits for it as before.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from django.db import connection
from django.db.models import Exists, OuterRef

from executions.engine import inbox
from executions.engine.events import Decision, Source
from executions.engine.state import ExecutionState
from executions.models import Attempt, AttemptStatus, Execution
from executions.sqlnames import sql

log = logging.getLogger(__name__)


def enabled() -> bool:
    return bool(connection.features.has_select_for_update_skip_locked)


def waiting(execution_id: str, *, claims: bool = False) -> bool:
    """Whether the inbox holds a fact that asks for a decision: a result. A claim alone
    (`claims`: counted too) waits for the next unit, its result's as a rule, or the
    sweeper's next tick."""
    found = Attempt.objects.filter(execution_id=execution_id, unlogged=True)
    if not claims:
        found = found.filter(finished_at__isnull=False)
    return found.exists()


def waiting_for(execution: OuterRef) -> Exists:
    """`waiting` as a subquery of the execution's own query (lock.lock_execution)."""
    return Exists(Attempt.objects.filter(execution_id=execution, unlogged=True))


class Drained(Protocol):
    """What the drain appends the inbox's facts to: the unit of work (kernel/unit.py)."""

    @property
    def execution(self) -> Execution: ...
    @property
    def state(self) -> ExecutionState: ...
    def append(
        self, decisions: Sequence[Decision], *, source: Source, at: datetime | None = None
    ) -> None: ...
    def crowded(self) -> bool: ...
    def freed_slot(self, pool: str | None) -> None: ...
    def made_room(self, *, published: bool, pool: str | None, crowded_before: bool) -> None: ...


def drain(work: Drained, *, waiting: bool) -> None:
    """Append the inbox's facts to the unit (inside the lock), and mark their rows logged.
    `waiting`: whether the lock read any (Locked.inbox_waiting)."""
    execution = work.execution
    # A new execution has no attempts yet; a locked one says whether its inbox has any.
    if not enabled() or execution.last_seq == 0 or not waiting:
        return
    rows, extra = [], {}
    for *values, published_at, pool_id in _take(str(execution.pk)):
        rows.append(inbox.Row(*values))
        extra[values[0]] = (published_at, pool_id)
    if not rows:
        return
    state = work.state
    crowded_before = work.crowded()
    cancelled: list[int] = []
    for fact in inbox.facts(rows):
        if inbox.admits(state, fact):
            # Never before what the log already holds: its timestamps only go forward.
            at = max(fact.at, state.now) if state.now else fact.at
            work.append([fact.decision], source=Source.WORKER, at=at)
            published_at, pool_id = extra[fact.row.pk]
            if fact.is_result:
                work.freed_slot(pool_id)
            else:
                published = published_at is not None
                work.made_room(published=published, pool=pool_id, crowded_before=crowded_before)
        elif inbox.dropped_status(state, fact) == AttemptStatus.CANCELLED:
            cancelled.append(fact.row.pk)
        elif fact.is_result:
            # Not a cancel: the log holds a result for it already, or moved past it (a
            # timeout decided under the lock wins over a result that came after it).
            log.warning("execution %s: result of %s#%s not logged: the log moved past it",
                        execution.pk, fact.row.node_id, fact.row.attempt)  # fmt: skip
    if cancelled:
        Attempt.objects.filter(pk__in=cancelled).update(status=AttemptStatus.CANCELLED)


#: Reads and clears the inbox in one statement. Each row is locked as it is read, so a
#: worker's result written meanwhile waits for this unit's commit, then lands on a row
#: still running and puts it back in the inbox: nothing written is ever cleared unread.
_TAKE = sql(
    """
UPDATE {a} AS a SET {a.unlogged} = false, {a.result} = NULL
FROM (
    SELECT {a.id}, {a.result} FROM {a}
    WHERE {a.execution} = %s AND {a.unlogged} FOR UPDATE
) AS old
WHERE a.{a.id} = old.{a.id}
RETURNING a.{a.id}, a.{a.node_id}, a.{a.attempt}, a.{a.status}, a.{a.worker_id},
    a.{a.claimed_at}, a.{a.finished_at}, old.{a.result}, a.{a.published_at}, a.{a.pool}
""",
    a=Attempt,
)


def _take(execution_id: str) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(_TAKE, [execution_id])
        found = cursor.fetchall()
    # jsonb comes back as text through Django's cursor (its JSONField parses it).
    return [(*row[:7], _json(row[7]), *row[8:]) for row in found]


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value
