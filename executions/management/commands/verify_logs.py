"""manage.py verify_logs [ids ...] [--all] [--since HOURS] [--after ID] [--checkpoint FILE]
                      [--workers N] [--rebuild] [--json FILE]

Checks executions against their logs: the hash chain, every orchestrator decision, the
projections, the attempts and the timers (executions/integrity.py). Without ids or
--all it checks the executions created in the last --since hours (default 24). Reads in
batches of executions (one query per table per batch) with a progress bar; prints each
problem and exits 1 if there is any. --rebuild rewrites projections, attempts and timers
from the log of every checked execution whose chain and decisions verify (a tampered log
is reported, never copied into fresh rows).

Purged executions (purge_executions) are counted apart: their logs are gone from the
database, and their tombstones keep what an archive is checked against.

Executions are checked in id order, so a long run can be resumed: --after ID starts past
that execution, and --checkpoint FILE records, after every batch, the last id checked and
the counts and problems so far (an interrupted run given the same file goes on from there;
a finished run removes it). --workers N checks batches in N processes.
"""

from __future__ import annotations

import json
import multiprocessing
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections
from tqdm import tqdm

from executions.engine.chain import Linked
from executions.engine.events import Event as EngineEvent
from executions.integrity import Problem, check, rebuild_rows
from executions.kernel.log import LOG_COLUMNS, both_forms
from executions.models import Attempt, Event, Execution, Task, Timer, Tombstone
from workflows import clock

#: Executions read and checked together: one query per table per batch.
BATCH = 200
_REPAIRABLE = frozenset({"projection", "attempts", "timers"})


class Command(BaseCommand):
    help = "Verify executions against their event logs (chain, decisions, projections, rows)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("ids", nargs="*", help="execution ids (default: recent ones)")
        parser.add_argument("--all", action="store_true", help="every execution")
        parser.add_argument(
            "--since", type=float, default=24.0, help="hours back, without ids or --all"
        )
        parser.add_argument(
            "--rebuild", action="store_true", help="rewrite projections, attempts and timers"
        )
        parser.add_argument("--json", type=Path, default=None, help="write a JSON report here")
        parser.add_argument("--batch", type=int, default=BATCH, help="executions per batch")
        parser.add_argument(
            "--workers", type=int, default=1, help="processes checking batches side by side"
        )
        parser.add_argument("--after", default=None, help="only executions with a greater id")
        parser.add_argument(
            "--checkpoint", type=Path, default=None, help="resume from / record progress here"
        )

    def handle(self, *args, **options) -> None:
        progress = Checkpoint.load(options["checkpoint"], options["after"])
        ids = self._select(options, progress.after)
        started = time.perf_counter() - progress.seconds
        bar = tqdm(
            total=progress.executions + len(ids),
            initial=progress.executions,
            unit="exec",
            file=self.stderr,
            disable=None,
        )
        problems: list[Problem] = progress.problems
        events_seen = progress.events
        batch = max(1, options["batch"])
        chunks = [ids[start : start + batch] for start in range(0, len(ids), batch)]
        done = 0
        for chunk, (found, count) in zip(chunks, _checked(chunks, options["workers"]), strict=True):
            done += len(chunk)
            problems += found
            events_seen += count
            bar.update(len(chunk))
            bar.set_postfix(events=events_seen, problems=len(problems), refresh=False)
            progress.save(
                after=str(chunk[-1]),
                executions=progress.executions + done,
                events=events_seen,
                seconds=time.perf_counter() - started,
                problems=problems,
            )
        bar.close()
        checked = progress.executions + len(ids)
        seconds = time.perf_counter() - started
        progress.finish()
        rebuilt = self._rebuild(problems) if options["rebuild"] else set()
        remaining = [p for p in problems if p.execution_id not in rebuilt]
        if rebuilt:  # what a rebuild could not fix is still a problem
            remaining += check_batch([uuid.UUID(e) for e in sorted(rebuilt)])[0]
        rate = events_seen / seconds if seconds > 0 else 0.0
        self.stdout.write(
            f"checked {checked} executions, {events_seen} events in {seconds:.2f}s "
            f"({rate:,.0f} events/s)"
        )
        purged = self._purged(options)
        if purged:
            # Their logs are gone (archived, if at all, outside the database): their
            # tombstones keep each chain's last hash for an archive to be checked against.
            self.stdout.write(f"purged {purged} executions (tombstones, not checked)")
        if rebuilt:
            self.stdout.write(f"rebuilt projections, attempts and timers of {len(rebuilt)}")
        if options["json"]:
            report = {
                "executions": checked,
                "events": events_seen,
                "seconds": round(seconds, 3),
                "events_per_second": round(rate, 1),
                "rebuilt": sorted(rebuilt),
                "problems": [p.as_dict() for p in remaining],
            }
            options["json"].write_text(json.dumps(report, indent=2) + "\n")
        for problem in remaining:
            self.stdout.write(str(problem))
        if remaining:
            executions = len({p.execution_id for p in remaining})
            raise CommandError(f"{len(remaining)} problem(s) in {executions} execution(s)")
        self.stdout.write("ok: every checked log verifies and every row agrees with it")

    def _select(self, options, after: str | None) -> list[uuid.UUID]:
        queryset = Execution.objects.order_by("pk")
        if after is not None:
            try:
                queryset = queryset.filter(pk__gt=uuid.UUID(after))
            except ValueError:
                raise CommandError(f"--after: {after!r} is not an execution id") from None
        if options["ids"]:
            try:
                wanted = [uuid.UUID(value) for value in options["ids"]]
            except ValueError as exc:
                raise CommandError(f"not an execution id: {exc}") from None
            found = list(queryset.filter(pk__in=wanted).values_list("pk", flat=True))
            purged = Tombstone.objects.filter(pk__in=wanted).values_list("pk", flat=True)
            missing = sorted(set(wanted) - set(found) - set(purged), key=str)
            if missing:
                raise CommandError(f"no execution {', '.join(map(str, missing))}")
            return found
        if not options["all"]:
            since = clock.now() - timedelta(hours=options["since"])
            queryset = queryset.filter(created_at__gte=since)
        return list(queryset.values_list("pk", flat=True))

    def _purged(self, options) -> int:
        """How many of the executions asked for were purged."""
        if options["ids"]:
            return Tombstone.objects.filter(pk__in=set(map(uuid.UUID, options["ids"]))).count()
        return Tombstone.objects.count() if options["all"] else 0

    def _rebuild(self, problems: list[Problem]) -> set[str]:
        """Rebuild every execution with repairable problems and a log that verifies."""
        untrusted = {p.execution_id for p in problems if p.kind not in _REPAIRABLE}
        wanted = {p.execution_id for p in problems if p.kind in _REPAIRABLE} - untrusted
        for execution_id in sorted(wanted):
            rebuild_rows(execution_id)
        return wanted


def check_batch(ids: list[uuid.UUID]) -> tuple[list[Problem], int]:
    """Check a batch of executions, reading each table once: (problems, events read)."""
    executions = Execution.objects.filter(pk__in=ids).defer("snapshot")
    linked: dict[uuid.UUID, list[Linked]] = defaultdict(list)
    events: dict[uuid.UUID, list[EngineEvent]] = defaultdict(list)
    rows = (
        Event.objects.filter(execution_id__in=ids)
        .order_by("execution_id", "seq")
        .values_list("execution_id", *LOG_COLUMNS)
    )
    count = 0
    for eid, *row in rows.iterator(chunk_size=5000):
        count += 1
        event, link = both_forms(tuple(row))
        events[eid].append(event)
        linked[eid].append(link)
    tasks, attempts, timers = _group(Task, ids), _group(Attempt, ids), _group(Timer, ids)
    problems: list[Problem] = []
    for execution in executions:
        eid = execution.pk
        problems += check(
            execution,
            linked[eid],
            events[eid],
            tasks=tasks[eid],
            attempts=attempts[eid],
            timers=timers[eid],
        )
    return problems, count


def _checked(chunks: list[list[uuid.UUID]], workers: int) -> Iterator[tuple[list[Problem], int]]:
    """check_batch of each chunk, in order; with workers > 1, in that many processes
    (each with its own database connection), so a large database is checked on every core."""
    if workers <= 1 or len(chunks) <= 1:
        yield from (check_batch(chunk) for chunk in chunks)
        return
    connections.close_all()  # a forked child must not share the parent's connection
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_fresh) as pool:
        yield from pool.map(check_batch, chunks)


def _fresh() -> None:
    connections.close_all()


def _group(model, ids: list[uuid.UUID]) -> dict[uuid.UUID, list]:
    grouped: dict[uuid.UUID, list] = defaultdict(list)
    for row in model.objects.filter(execution_id__in=ids):
        grouped[row.execution_id].append(row)
    return grouped


@dataclass
class Checkpoint:
    """How far a run got: the last execution id checked, and what it found until then."""

    path: Path | None
    after: str | None = None
    executions: int = 0
    events: int = 0
    seconds: float = 0.0
    problems: list[Problem] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path | None, after: str | None) -> Checkpoint:
        if path is None or not path.exists():
            return cls(path, after)
        try:
            raw = json.loads(path.read_text())
            return cls(
                path,
                raw["after"],
                int(raw["executions"]),
                int(raw["events"]),
                float(raw["seconds"]),
                [Problem(**problem) for problem in raw["problems"]],
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise CommandError(f"--checkpoint {path} is not a checkpoint: {exc}") from None

    def save(self, **progress: Any) -> None:
        if self.path is None:
            return
        progress["problems"] = [p.as_dict() for p in progress["problems"]]
        partial = self.path.with_name(self.path.name + ".partial")
        partial.write_text(json.dumps(progress))
        partial.replace(self.path)  # atomic: an interrupted write leaves the last one

    def finish(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)
