"""manage.py purge_executions (--older-than <N>d | --ended-before <ISO time>) [--workflow W]
                             [--status S] [--archive DIR] [--dry-run] [--batch-size N]

Deletes ended executions (succeeded, failed, cancelled; a parent only with its whole tree
of children, all ended) with every row that belongs to them, in batches, each leaving a
tombstone (executions/services/purge.py). --archive writes each execution's history file
(`replay_execution --export`'s format) to DIR and reads it back before its batch deletes
anything. Killed, it resumes when run again.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from tqdm import tqdm

from executions.retention.selection import ENDED, Criteria, Tree, summary
from executions.services.purge import BATCH_SIZE, PurgeReport, cutoff_for, executions_purge
from workflows.selectors import workflow_get

_DAYS = re.compile(r"(\d+(?:\.\d+)?)d\Z")


class Command(BaseCommand):
    help = "Delete ended executions and every row of theirs, in batches, leaving tombstones."

    def add_arguments(self, parser: CommandParser) -> None:
        when = parser.add_mutually_exclusive_group(required=True)
        when.add_argument("--older-than", help="ended more than this long ago: <N>d (days)")
        when.add_argument("--ended-before", help="ended before this ISO 8601 time")
        parser.add_argument("--workflow", help="only this workflow's (name or id)")
        parser.add_argument("--status", choices=ENDED, help="only executions that ended so")
        parser.add_argument(
            "--archive", type=Path, help="write each history file here before deleting"
        )
        parser.add_argument("--dry-run", action="store_true", help="count, delete nothing")
        parser.add_argument(
            "--batch-size", type=int, default=BATCH_SIZE, help="executions per transaction"
        )

    def handle(self, *args, **options) -> None:
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1")
        criteria = Criteria(
            cutoff=_cutoff(options["older_than"], options["ended_before"]),
            workflow_id=_workflow(options["workflow"]),
            status=options["status"],
        )
        directory = options["archive"]
        if directory is not None and not options["dry_run"]:
            try:
                directory.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise CommandError(f"--archive {directory}: {exc}") from None
        roots, events = summary(criteria)
        bar = tqdm(total=roots, unit="tree", file=self.stderr, disable=None)
        verbose = options["verbosity"] >= 2

        def progress(report: PurgeReport, batch: list[Tree]) -> None:
            bar.update(len(batch))
            bar.set_postfix(executions=report.executions, events=report.events, refresh=False)
            if verbose:
                self.stdout.write(_line(report))

        self.stdout.write(
            f"{'would purge' if options['dry_run'] else 'purging'} up to {roots} top-level "
            f"executions ended before {criteria.cutoff.isoformat()} ({events} of their events)"
        )
        report = executions_purge(
            criteria=criteria,
            archive=directory,
            dry_run=options["dry_run"],
            batch_size=options["batch_size"],
            progress=progress,
        )
        bar.close()
        self.stdout.write(_summary(report))


def _cutoff(older_than: str | None, ended_before: str | None) -> datetime:
    if older_than is not None:
        found = _DAYS.match(older_than.strip())
        if found is None:
            raise CommandError(f"--older-than {older_than!r}: give days as <N>d, e.g. 30d")
        return cutoff_for(float(found.group(1)))
    moment = parse_datetime(ended_before or "")
    if moment is None:
        raise CommandError(f"--ended-before {ended_before!r} is not an ISO 8601 time")
    if timezone.is_naive(moment):
        raise CommandError(f"--ended-before {ended_before!r}: give its offset (e.g. Z)")
    return moment


def _workflow(ref: str | None) -> int | None:
    if ref is None:
        return None
    found = workflow_get(ref=ref)
    if found is None:
        raise CommandError(f"--workflow: no workflow with id or name {ref!r}")
    return found.pk


def _line(report: PurgeReport) -> str:
    return (
        f"batch {report.batches}: {report.executions} executions, {report.events} events "
        f"so far ({report.left} left for later)"
    )


def _summary(report: PurgeReport) -> str:
    verb = "would purge" if report.dry_run else "purged"
    lines = [
        f"{verb} {report.executions} executions ({report.trees} trees), {report.events} "
        f"events in {report.batches} batches, {report.seconds:.2f}s "
        f"({report.events_per_second:,.0f} events/s)"
    ]
    if report.archived:
        lines.append(f"archived {report.archived} history files")
    if report.left:
        lines.append(
            f"left {report.left} trees for a later run (a member still running, busy or "
            "changed since selected)"
        )
    if report.rows:
        counts = ", ".join(f"{table} {n}" for table, n in sorted(report.rows.items()))
        lines.append(f"rows deleted: {counts}")
    return "\n".join(lines)
