"""Whole-database verification at scale: `verify_logs --all` over N synthetic events.

    python -m bench.whole_db --events 1000000 [--batch 200]

Fills a database of its own (WORKFLOW_BENCH_DATABASE_URL, or DATABASE_URL's server with
the database `workflow_bench_wholedb`; dropped and created afresh) with copies of the golden
histories (tests/golden/histories/): each copy gets its own execution id, its decisions
are re-derived for that id (retry jitter is a hash of it) and its hash chain recomputed,
and its Execution, Task, Attempt and Timer rows are the ones the log implies, so every copy
verifies. Then it runs `verify_logs --all --json` and prints the report (events/s).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.environment import ROOT, recreate_database
from bench.history import chained, synth_history

HISTORIES = ROOT / "tests" / "golden" / "histories"
DATABASE = "workflow_bench_wholedb"


def rederived(definition: Any, record: dict[str, Any], execution_id: str) -> list[Any]:
    """The golden log of `record` as execution `execution_id` would have recorded it: the
    same facts, every run of decisions re-derived (so retry delays carry this id's jitter)."""
    from executions.engine.decide import decide
    from executions.engine.events import Event, EventType, Source
    from executions.engine.fold import apply_event
    from executions.engine.state import ExecutionState

    state = ExecutionState(execution_id)
    out: list[Event] = []
    pending: list[dict[str, Any]] = []
    due: dict[str, str] = {}

    def flush() -> None:
        decisions = decide(definition, state)
        if len(decisions) != len(pending):
            raise ValueError(
                f"{record['name']}: {len(decisions)} decisions, {len(pending)} recorded"
            )
        for decision, raw in zip(decisions, pending, strict=True):
            event = decision.as_event(state.last_seq + 1, _moment(raw["timestamp"]))
            if decision.type == EventType.TASK_RETRY_SCHEDULED:
                due[decision.node_id or ""] = decision.data["due_at"]
            apply_event(state, event)
            out.append(event)
        pending.clear()

    for raw in record["events"]:
        if raw["source"] == Source.ENGINE:
            pending.append(raw)
            continue
        if pending:
            flush()
        data = raw["data"]
        if raw["type"] == EventType.TIMER_FIRED and data.get("kind") == "retry":
            data = {**data, "due_at": due.get(raw["node_id"], data.get("due_at"))}
        event = Event(
            state.last_seq + 1,
            EventType(raw["type"]),
            _moment(raw["timestamp"]),
            raw["node_id"],
            raw["attempt"],
            data,
            Source(raw["source"]),
        )
        apply_event(state, event)
        out.append(event)
    if pending:
        flush()
    return out


def _moment(text: str) -> Any:
    from datetime import datetime

    return datetime.fromisoformat(text)


def copy_rows(definition: Any, version: Any, events: list[Any], execution_id: uuid.UUID):
    """(Execution, [Event], [Task], [Attempt], [Timer]) rows of one copy, unsaved."""
    from executions.engine.fold import fold
    from executions.engine.state import NodeState
    from executions.engine.statuses import EXECUTION_TERMINAL, TASK_ACTIVE
    from executions.integrity import expected_attempts, expected_timers
    from executions.kernel.projections import execution_fields, task_fields
    from executions.models import Attempt, Event, Execution, Task, Timer

    state = fold(events, execution_id=str(execution_id))
    hashes = chained(events)
    rows = [
        Event(
            execution_id=execution_id, seq=e.seq, type=str(e.type), node_id=e.node_id,
            attempt=e.attempt, data=e.data, timestamp=e.timestamp, source=str(e.source),
            hash=digest,
        )
        for e, digest in zip(events, hashes, strict=True)
    ]  # fmt: skip
    execution = Execution(
        id=execution_id,
        workflow_id=version.workflow_id,
        version=version,
        input=state.input if state.input is not None else {},
        last_seq=len(events),
        decided_seq=len(events),
        last_hash=hashes[-1] if hashes else "",
        **execution_fields(state),
    )
    wanted = [n.id for n in definition.nodes]
    wanted += [node_id for node_id in state.nodes if node_id not in definition.by_id]
    tasks = [
        Task(
            execution_id=execution_id,
            node_id=node_id,
            type=definition.node_for(node_id).type,
            **task_fields(state.nodes.get(node_id) or NodeState(node_id)),
        )
        for node_id in wanted
    ]
    attempts = [
        Attempt(
            execution_id=execution_id,
            node_id=node_id,
            attempt=number,
            status=want.status,
            scheduled_at=want.scheduled_at,
        )
        for (node_id, number), want in expected_attempts(events).items()
    ]

    def settled(node_id: str) -> bool:
        return state.status in EXECUTION_TERMINAL or state.node(node_id).status not in TASK_ACTIVE

    timers = [
        Timer(
            execution_id=execution_id,
            node_id=node_id,
            attempt=number,
            kind=kind,
            due_at=want.due_at,
            fired_at=want.fired_at or (state.now if settled(node_id) else None),
        )
        for (node_id, number, kind), want in expected_timers(events).items()
    ]
    return execution, rows, tasks, attempts, timers


def templates() -> Iterator[tuple[Any, Any, dict[str, Any]]]:
    """(definition, version row, record) per golden history, its workflow created."""
    from executions.definitions import definition_for
    from workflows.models import WorkflowDefinition, WorkflowVersion

    for path in sorted(HISTORIES.glob("*.json")):
        record = json.loads(path.read_text())
        workflow, _ = WorkflowDefinition.objects.get_or_create(name=f"golden-{path.stem}")
        version, _ = WorkflowVersion.objects.get_or_create(
            workflow=workflow, version=1, defaults={"definition": record["definition"]}
        )
        yield definition_for(version.pk), version, record


def populate(target_events: int, *, shape: str = "golden", chunk: int = 500) -> tuple[int, int]:
    """Copies of the golden histories, round robin (shape "golden"), or retry histories of
    LONG events each (shape "long"), until `target_events` are stored. Returns (executions,
    events)."""
    from django.db import transaction

    from executions.models import Attempt, Event, Execution, Task, Timer

    sources = list(templates()) if shape == "golden" else [_long_template()]
    executions = events = 0
    while events < target_events:
        batch: list[tuple] = []
        while len(batch) < chunk and events < target_events:
            definition, version, record = sources[executions % len(sources)]
            execution_id = uuid.uuid4()
            if record is None:
                log = synth_history(definition, str(execution_id), LONG)
            else:
                log = rederived(definition, record, str(execution_id))
            batch.append(copy_rows(definition, version, log, execution_id))
            executions += 1
            events += len(log)
        with transaction.atomic():
            Execution.objects.bulk_create([b[0] for b in batch], batch_size=1000)
            for index, model in ((1, Event), (2, Task), (3, Attempt), (4, Timer)):
                rows = [row for b in batch for row in b[index]]
                model.objects.bulk_create(rows, batch_size=2000)
    return executions, events


#: Events in each execution of shape "long" (bench/history.py's retry history).
LONG = 10_000


def _long_template() -> tuple[Any, Any, Any]:
    from bench.definitions import RETRY_FOREVER, make_version
    from executions.definitions import definition_for

    version = make_version("retry-forever", RETRY_FOREVER)
    return definition_for(version.pk), version, None


def verify_only_rate() -> float:
    """events/s of verify_log alone (no reading, no chain, no rows) over the same logs:
    what the single-execution path spends on decisions, for comparison."""
    from executions.definitions import definition_for
    from executions.engine.verify import verify_log
    from executions.kernel.log import engine_events
    from executions.models import Execution

    spent, count = 0.0, 0
    for execution_id, version_id in Execution.objects.values_list("pk", "version_id"):
        events = engine_events(execution_id)
        began = time.perf_counter()
        verify_log(definition_for(version_id), events, execution_id=str(execution_id))
        spent += time.perf_counter() - began
        count += len(events)
    return count / spent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=200, help="verify_logs --batch")
    parser.add_argument("--workers", type=int, default=1, help="verify_logs --workers")
    parser.add_argument("--shape", choices=("golden", "long"), default="golden")
    args = parser.parse_args(argv)
    url = os.environ.get("WORKFLOW_BENCH_DATABASE_URL") or _sibling(DATABASE)
    recreate_database(url)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("SECRET_KEY", "bench-whole-db")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    began = time.perf_counter()
    executions, events = populate(args.events, shape=args.shape)
    filled = time.perf_counter() - began
    print(f"stored {executions} executions, {events} events in {filled:.1f}s", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        call_command(
            "verify_logs", "--all", "--batch", str(args.batch), "--workers", str(args.workers),
            "--json", str(report),
        )  # fmt: skip
        result = json.loads(report.read_text())
    result.pop("problems")
    result["verify_log_alone_events_per_second"] = round(verify_only_rate(), 1)
    print(
        json.dumps({"shape": args.shape, "stored_in_seconds": round(filled, 1), **result}, indent=2)
    )
    return 0


def _sibling(name: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/workflow")
    return urlunsplit(urlsplit(base)._replace(path=f"/{name}"))


if __name__ == "__main__":
    raise SystemExit(main())
