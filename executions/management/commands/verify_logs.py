"""manage.py verify_logs [ids ...] [--all] [--since HOURS] [--rebuild] [--json FILE]

Checks executions against their logs: the hash chain, every orchestrator decision, the
projections, the attempts and the timers (executions/integrity.py). Without ids or
--all it checks the executions created in the last --since hours (default 24). Reads in
batches of executions (one query per table per batch) with a progress bar; prints each
problem and exits 1 if there is any. --rebuild rewrites projections, attempts and timers
from the log of every checked execution whose chain and decisions verify (a tampered log
is reported, never copied into fresh rows).
"""

from __future__ import annotations

import json
import time
import uuid
from collections import defaultdict
from datetime import timedelta
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from tqdm import tqdm

from executions.engine.chain import Linked
from executions.engine.events import Event as EngineEvent
from executions.integrity import Problem, check, rebuild_rows
from executions.models import Attempt, Event, Execution, Task, Timer
from executions.store import LOG_COLUMNS, both_forms

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

    def handle(self, *args, **options) -> None:
        ids = self._select(options)
        started = time.perf_counter()
        bar = tqdm(total=len(ids), unit="exec", file=self.stderr, disable=None)
        problems: list[Problem] = []
        events_seen = 0
        for start in range(0, len(ids), max(1, options["batch"])):
            found, count = self._check_batch(ids[start : start + options["batch"]])
            problems += found
            events_seen += count
            bar.update(min(options["batch"], len(ids) - start))
            bar.set_postfix(events=events_seen, problems=len(problems), refresh=False)
        bar.close()
        seconds = time.perf_counter() - started
        rebuilt = self._rebuild(problems) if options["rebuild"] else set()
        remaining = [p for p in problems if p.execution_id not in rebuilt]
        if rebuilt:  # what a rebuild could not fix is still a problem
            remaining += self._check_batch([uuid.UUID(e) for e in sorted(rebuilt)])[0]
        rate = events_seen / seconds if seconds > 0 else 0.0
        self.stdout.write(
            f"checked {len(ids)} executions, {events_seen} events in {seconds:.2f}s "
            f"({rate:,.0f} events/s)"
        )
        if rebuilt:
            self.stdout.write(f"rebuilt projections, attempts and timers of {len(rebuilt)}")
        if options["json"]:
            report = {
                "executions": len(ids),
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

    def _select(self, options) -> list[uuid.UUID]:
        queryset = Execution.objects.order_by("pk")
        if options["ids"]:
            try:
                wanted = [uuid.UUID(value) for value in options["ids"]]
            except ValueError as exc:
                raise CommandError(f"not an execution id: {exc}") from None
            found = list(queryset.filter(pk__in=wanted).values_list("pk", flat=True))
            missing = sorted(set(wanted) - set(found), key=str)
            if missing:
                raise CommandError(f"no execution {', '.join(map(str, missing))}")
            return found
        if not options["all"]:
            since = timezone.now() - timedelta(hours=options["since"])
            queryset = queryset.filter(created_at__gte=since)
        return list(queryset.values_list("pk", flat=True))

    def _check_batch(self, ids: list[uuid.UUID]) -> tuple[list[Problem], int]:
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

    def _rebuild(self, problems: list[Problem]) -> set[str]:
        """Rebuild every execution with repairable problems and a log that verifies."""
        untrusted = {p.execution_id for p in problems if p.kind not in _REPAIRABLE}
        wanted = {p.execution_id for p in problems if p.kind in _REPAIRABLE} - untrusted
        for execution_id in sorted(wanted):
            rebuild_rows(execution_id)
        return wanted


def _group(model, ids: list[uuid.UUID]) -> dict[uuid.UUID, list]:
    grouped: dict[uuid.UUID, list] = defaultdict(list)
    for row in model.objects.filter(execution_id__in=ids):
        grouped[row.execution_id].append(row)
    return grouped
