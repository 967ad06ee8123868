"""One batch of a purge: whole trees of ended executions and every row that belongs to
them, deleted in one short transaction that leaves a tombstone for each.

Locks. The batch locks its executions' rows with SKIP LOCKED: it never waits for an
execution's lock, so it is in no deadlock cycle through them, and a tree one of whose
rows another transaction holds (a late result, a retry, a sweep) is left for a later
batch. Every row it deletes after that belongs to those executions (the house order:
the Execution row first, then its Attempt, Timer and Task rows), and no running execution
locks a row of an ended one; on PostgreSQL `lock_timeout` bounds any wait there all the
same (a batch that would wait longer rolls back and its trees are left for later). The
rows of other executions that point at these (a replay's replay_of) are unlinked before
the batch, in their own statement (services/purge.py): the batch itself never writes an
execution it does not delete.

The log's guard. On PostgreSQL the trigger on events (migration 0018) refuses a DELETE
unless the transaction set `executions.purge` (transaction-local, `set_config(..., true)`)
and the event's execution has ended; only this module sets it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

from django.db import OperationalError, connection, transaction
from django.db.models import Count, Exists, Model, OuterRef, QuerySet

from executions.metrics import ledger
from executions.models import (
    Attempt,
    Event,
    Execution,
    PublishedEvent,
    RetryRequest,
    ScheduleFire,
    Task,
    Timer,
    Tombstone,
    TriggerRun,
)
from executions.retention.archive import Archived
from executions.retention.selection import ENDED, Tree

#: How long a batch may wait for a row lock before it gives up on PostgreSQL: shorter than
#: the server's deadlock_timeout (1 s by default), so the batch is the one that yields.
LOCK_TIMEOUT = "500ms"

_COLUMNS = (
    "pk", "workflow_id", "version_id", "status", "ended_at", "last_seq", "last_hash",
    "concurrency_key",
)  # fmt: skip


@dataclass
class BatchOutcome:
    purged: list[Tree] = field(default_factory=list)
    #: Trees left for a later batch: locked, changed since selected or archived, or
    #: pointed at by an execution outside them.
    left: list[Tree] = field(default_factory=list)
    #: Rows deleted, by table.
    rows: Counter[str] = field(default_factory=Counter)
    #: (workflow id, concurrency key) of the purged executions that had one.
    keys: set[tuple[int, str]] = field(default_factory=set)


def purge_batch(
    trees: list[Tree], *, now: datetime, archived: dict[UUID, Archived] | None = None
) -> BatchOutcome:
    """Delete these trees, each whole or not at all, in one transaction."""
    outcome = BatchOutcome()
    try:
        with transaction.atomic():
            _open_guard()
            rows = _locked([m for tree in trees for m in tree.members])
            kept = _still_purgeable(trees, rows, archived)
            roots = {tree.root for tree in kept}
            outcome.left = [tree for tree in trees if tree.root not in roots]
            ids = [member for tree in kept for member in tree.members]
            if ids:
                Tombstone.objects.bulk_create([_tombstone(rows[pk], now) for pk in ids])
                ledger.add(_gauges_released(ids))
                outcome.rows = _delete_rows(ids)
            outcome.purged = kept
    except OperationalError as exc:
        if not _gave_up_waiting(exc):
            raise
        return BatchOutcome(left=list(trees))
    outcome.keys = {(rows[pk][1], rows[pk][7]) for pk in ids if rows[pk][7]}
    return outcome


def _open_guard() -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT set_config('executions.purge', 'on', true), "
                "set_config('lock_timeout', %s, true)",
                [LOCK_TIMEOUT],
            )


def _gave_up_waiting(exc: OperationalError) -> bool:
    # 55P03 lock_not_available (lock_timeout), 40P01 deadlock_detected.
    return getattr(getattr(exc, "__cause__", None), "sqlstate", None) in {"55P03", "40P01"}


def _locked(ids: list[UUID]) -> dict[UUID, tuple]:
    """The ended executions among `ids` that no one else holds, locked."""
    rows = Execution.objects.filter(pk__in=ids, status__in=ENDED)
    if connection.features.has_select_for_update_skip_locked:
        rows = rows.select_for_update(skip_locked=True)
    # On SQLite the IMMEDIATE transaction already holds the database's write lock.
    return {row[0]: row for row in rows.values_list(*_COLUMNS)}


def _still_purgeable(
    trees: list[Tree], rows: dict[UUID, tuple], archived: dict[UUID, Archived] | None
) -> list[Tree]:
    ids = [member for tree in trees for member in tree.members]
    # Children started since the selection, replays started since their unlinking.
    pointed = set(
        Execution.objects.filter(parent_execution_id__in=ids)
        .exclude(pk__in=ids)
        .values_list("parent_execution_id", flat=True)
    ) | set(
        Execution.objects.filter(replay_of_id__in=ids)
        .exclude(pk__in=ids)
        .values_list("replay_of_id", flat=True)
    )
    kept = []
    for tree in trees:
        members = tree.members
        if any(m not in rows or m in pointed for m in members):
            continue
        if archived is not None and any(_differs(rows[m], archived.get(m)) for m in members):
            continue  # an event came after the archive was written: archive it again
        kept.append(tree)
    return kept


def _differs(row: tuple, archive: Archived | None) -> bool:
    return archive is None or (row[5], row[6]) != (archive.events, archive.last_hash)


def _tombstone(row: tuple, now: datetime) -> Tombstone:
    pk, workflow_id, version_id, status, ended_at, last_seq, last_hash, _key = row
    return Tombstone(
        id=pk,
        workflow_id=workflow_id,
        version_id=version_id,
        status=status,
        ended_at=ended_at,
        purged_at=now,
        events=last_seq,
        last_hash=last_hash,
    )


def _gauges_released(ids: list[UUID]) -> dict[ledger.Key, float]:
    """What these executions and their tasks take out of the status gauges
    (workflow_executions, workflow_tasks count the rows that exist, as metrics_rebuild
    does), applied in the purge's own transaction. Counters keep what they counted."""
    started = Execution.objects.filter(pk__in=ids, last_seq__gt=0).order_by()
    tasks = Task.objects.filter(execution_id__in=ids, execution__last_seq__gt=0).order_by()
    released: dict[ledger.Key, float] = {}
    for name, rows in (("workflow_executions", started), ("workflow_tasks", tasks)):
        for status, n in rows.values_list("status").annotate(n=Count("pk")):
            released[(name, ledger.labels_key({"status": status}))] = -n
    return released


def _delete_rows(ids: list[UUID]) -> Counter[str]:
    """Every row of these executions, those that point at them first."""
    deleted: Counter[str] = Counter()

    def drop(model: type[Model], rows: QuerySet) -> None:
        # _raw_delete: one DELETE, no collector (every relation is handled here) and no
        # model delete(), which Event refuses: this is the one place its rows go.
        deleted[model._meta.db_table] += rows._raw_delete(connection.alias)

    for model in (RetryRequest, Timer, Attempt, Task, ScheduleFire):
        drop(model, model.objects.filter(execution_id__in=ids))
    _drop_trigger_rows(ids, drop)
    drop(Event, Event.objects.filter(execution_id__in=ids))
    drop(Execution, Execution.objects.filter(pk__in=ids))
    return deleted


def _drop_trigger_rows(ids: list[UUID], drop: Callable[[type[Model], QuerySet], None]) -> None:
    """Their trigger runs, and the published events left pointing at no execution."""
    touched = list(
        TriggerRun.objects.filter(execution_id__in=ids).values_list("event_id", flat=True)
    )
    drop(TriggerRun, TriggerRun.objects.filter(execution_id__in=ids))
    if not touched:
        return
    live = TriggerRun.objects.filter(event=OuterRef("pk"), execution__isnull=False)
    orphans = PublishedEvent.objects.filter(pk__in=touched).exclude(Exists(live))
    drop(TriggerRun, TriggerRun.objects.filter(event__in=orphans))
    drop(PublishedEvent, orphans)
