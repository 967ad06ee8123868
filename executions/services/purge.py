"""Purge ended executions: whole trees, in batches of bounded size, each batch its own short
transaction (services/purge_batch.py), archived first when asked.

A purge killed at any point resumes by running it again: a batch commits whole or not at
all (its tombstones with its deletes), an archive is written again before its batch, and
the selection reads what is left. Between batches, outside any transaction of the batch:
the metrics' pending deltas are folded (their durations are read from the Attempt rows
the batch deletes), replays of the batch's executions are unlinked from them, and after
it the concurrency keys no execution uses any more are deleted.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from uuid import UUID

from django.db import connection, transaction

from executions.metrics import ledger
from executions.models import ConcurrencyKey, Execution
from executions.retention import archive as archives
from executions.retention.selection import Criteria, Tree, pages
from executions.services.purge_batch import BatchOutcome, purge_batch
from workflows import clock

#: Executions per batch, unless told otherwise.
BATCH_SIZE = 500
#: Events per batch: a batch takes trees until it holds this many (at least one tree,
#: however large: a tree goes whole).
BATCH_EVENTS = 20_000


@dataclass
class PurgeReport:
    executions: int = 0
    events: int = 0
    trees: int = 0
    batches: int = 0
    archived: int = 0
    #: Trees selected but left for a later run: busy, changed, or not all ended.
    left: int = 0
    rows: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    dry_run: bool = False

    @property
    def events_per_second(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else 0.0


#: Called after each batch with the report so far and the batch's trees.
Progress = Callable[[PurgeReport, list[Tree]], None]


def executions_purge(
    *,
    criteria: Criteria,
    archive: Path | None = None,
    dry_run: bool = False,
    batch_size: int = BATCH_SIZE,
    batch_events: int = BATCH_EVENTS,
    progress: Progress | None = None,
) -> PurgeReport:
    """Purge the trees `criteria` selects; returns what was (or, dry_run, would be) purged.
    Call it outside atomic(): each batch commits on its own."""
    report = PurgeReport(dry_run=dry_run)
    started = time.perf_counter()
    for page in pages(criteria, batch_size):
        report.left += page.unfinished
        for batch in batches(page.trees, batch_size, batch_events):
            if dry_run:
                _count(report, batch)
            else:
                _purge(report, batch, archive)
            report.batches += 1
            report.seconds = time.perf_counter() - started
            if progress is not None:
                progress(report, batch)
    report.seconds = time.perf_counter() - started
    return report


def batches(trees: list[Tree], size: int, events: int) -> Iterator[list[Tree]]:
    """Trees in batches of at most `size` executions and `events` events, a tree whole."""
    batch: list[Tree] = []
    held = counted = 0
    for tree in trees:
        if batch and (held + len(tree.members) > size or counted + tree.events > events):
            yield batch
            batch, held, counted = [], 0, 0
        batch.append(tree)
        held += len(tree.members)
        counted += tree.events
    if batch:
        yield batch


def _count(report: PurgeReport, batch: list[Tree]) -> None:
    report.trees += len(batch)
    report.executions += sum(len(tree.members) for tree in batch)
    report.events += sum(tree.events for tree in batch)


def _purge(report: PurgeReport, batch: list[Tree], directory: Path | None) -> None:
    ids = [member for tree in batch for member in tree.members]
    archived = None
    if directory is not None:
        archived = archives.archive(directory, ids)
        report.archived += len(archived)
    ledger.catch_up()
    _unlink_replays(ids)
    outcome = purge_batch(batch, now=clock.now(), archived=archived)
    _forget_keys(outcome)
    _count(report, outcome.purged)
    report.left += len(outcome.left)
    report.rows.update(outcome.rows)


def _unlink_replays(ids: list[UUID]) -> None:
    """Replays of these executions that are not purged with them lose their replay_of
    link, in one statement of its own: a running replay's lock is held for that alone."""
    Execution.objects.filter(replay_of_id__in=ids).exclude(pk__in=ids).update(replay_of=None)


def _forget_keys(outcome: BatchOutcome) -> None:
    """The concurrency keys of the purged executions that no execution uses any more.

    Each in a transaction of its own, after the batch's: admission takes a key's row
    before any execution's (store.py's lock order), so the purge takes a key only when it
    holds no execution, and skips one that admission holds (it is in use)."""
    for workflow_id, key in sorted(outcome.keys):
        with transaction.atomic():
            row = ConcurrencyKey.objects.filter(workflow_id=workflow_id, key=key)
            if connection.features.has_select_for_update_skip_locked:
                row = row.select_for_update(skip_locked=True)
            found = row.values_list("pk", flat=True).first()
            used = Execution.objects.filter(workflow_id=workflow_id, concurrency_key=key)
            if found is not None and not used.exists():
                ConcurrencyKey.objects.filter(pk=found).delete()


def cutoff_for(days: float, now: datetime | None = None) -> datetime:
    return (now or clock.now()) - timedelta(days=days)
