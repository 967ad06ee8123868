"""`python -m bench.run smoke|full`: the engine against raw Celery, side by side, in one run.

Runs on PostgreSQL + Redis (what `./dev bench` makes sure of):

- a fresh database `workflow_bench` (smoke: `workflow_bench_smoke`) on the server of
  DATABASE_URL, migrated here
  (WORKFLOW_BENCH_DATABASE_URL overrides the whole URL);
- Redis db 2 (smoke: 4) as the broker of both the engine and raw Celery, db 3 (smoke: 5)
  as the raw scenarios
  result backend and stamp store (BENCH_BROKER_URL / BENCH_RESULT_URL override);
- the engine: one `celery -A config worker -Q orchestrator,nodes --concurrency 2`
  (prefork: 2 worker processes, prefetch 1, acks late) and one `celery -A config beat`;
- raw Celery: one `celery -A bench.raw_app worker --concurrency 2` (the same arrangement:
  prefork, 2 processes, prefetch 1, acks late), tasks `bench.raw_tasks.noop`;
- the API for the start-latency scenario: `gunicorn config.wsgi -w 2` (sync workers).

Every figure is the median of several runs with its range (min-max). Prints a table and
writes bench/results/<variant>-<timestamp>.json and bench/results/latest-<variant>.json.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


# --- sizes ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    name: str
    fanout: int  # width of the 1 -> N -> 1 fan-out (nodes = N + 2)
    fanout_runs: int
    chain: int  # length of the linear chain
    chain_runs: int
    starts: int  # POST /executions per run
    start_runs: int
    history_short: int  # events
    history_long: int
    history_runs: int
    advances_per_run: int
    verify_sizes: tuple[int, ...]
    verify_runs: int
    verify_once: tuple[int, ...]  # sizes measured once (their range is one run)
    in_flight: int
    sweep_runs: int


VARIANTS = {
    "smoke": Variant(
        name="smoke",
        fanout=48,
        fanout_runs=2,
        chain=20,
        chain_runs=2,
        starts=20,
        start_runs=2,
        history_short=10,
        history_long=1_000,
        history_runs=2,
        advances_per_run=5,
        verify_sizes=(2_000, 10_000),
        verify_runs=2,
        verify_once=(),
        in_flight=200,
        sweep_runs=3,
    ),
    "full": Variant(
        name="full",
        # The DSL allows at most 1000 nodes per definition: 1 -> 998 -> 1 is 1000 nodes,
        # and the raw chord is the same 1 -> 998 -> 1.
        fanout=998,
        fanout_runs=3,
        chain=100,
        chain_runs=5,
        starts=200,
        start_runs=3,
        history_short=10,
        history_long=10_000,
        history_runs=3,
        advances_per_run=20,
        verify_sizes=(10_000, 100_000),
        verify_runs=3,
        verify_once=(1_000_000,),
        in_flight=10_000,
        sweep_runs=15,
    ),
}

TARGETS = {
    "throughput_ratio": (">=", 0.5),
    "latency_p50_ratio": ("<=", 2.0),
    "latency_p99_ratio": ("<=", 2.0),
    "start_p50_ms": ("<=", 20.0),
    "history_ratio": ("<=", 1.2),
    "verify_events_per_s": (">=", 100_000.0),
    "sweep_tick_ms": ("<=", 50.0),
}


# --- environment ---------------------------------------------------------------------


#: Each variant has its own database and Redis dbs, so a smoke run (CI, the test suite)
#: never drops the database under a full run on the same servers.
DATABASE_NAMES = {"full": "workflow_bench", "smoke": "workflow_bench_smoke"}
REDIS_DBS = {"full": (2, 3), "smoke": (4, 5)}


def bench_database_url(variant: str) -> str:
    explicit = os.environ.get("WORKFLOW_BENCH_DATABASE_URL")
    if explicit:
        return explicit
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/workflow")
    parts = urlsplit(base)
    if not parts.scheme.startswith("postgres"):
        raise SystemExit("bench: needs PostgreSQL (DATABASE_URL=postgres://...)")
    return urlunsplit(parts._replace(path=f"/{DATABASE_NAMES[variant]}"))


def redis_url(db: int) -> str:
    base = os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
    parts = urlsplit(base)
    if parts.scheme not in ("redis", "rediss"):
        raise SystemExit("bench: needs Redis (CELERY_BROKER_URL=redis://...)")
    return urlunsplit(parts._replace(path=f"/{db}"))


def recreate_database(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(path="/postgres", scheme="postgresql"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def machine() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as handle:
        for line in handle:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem_kb = 0
    with contextlib.suppress(OSError), open("/proc/meminfo") as handle:
        for line in handle:
            if line.startswith("MemTotal"):
                mem_kb = int(line.split()[1])
    return {
        "nproc": os.cpu_count(),
        "cpu_model": model,
        "ram_gb": round(mem_kb / 1024 / 1024, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return 0
    return 0


def children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found += [int(x) for x in handle.read().split()]
    return found


# --- processes -----------------------------------------------------------------------


@dataclass
class Processes:
    env: dict[str, str]
    log_dir: Path
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    def spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.log_dir / f"{name}.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            argv, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        self.procs[name] = proc
        return proc

    def celery(self, name: str, app: str, *args: str) -> subprocess.Popen:
        return self.spawn(name, [sys.executable, "-m", "celery", "-A", app, *args])

    def stop(self, name: str) -> None:
        proc = self.procs.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)

    def stop_all(self) -> None:
        for name in list(self.procs):
            self.stop(name)

    def check(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                tail = (self.log_dir / f"{name}.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{name} exited with {proc.returncode}:\n{tail}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- statistics ----------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def summary(runs: list[float], unit: str) -> dict[str, Any]:
    return {
        "median": statistics.median(runs),
        "min": min(runs),
        "max": max(runs),
        "runs": runs,
        "unit": unit,
    }


# --- workflow definitions ------------------------------------------------------------


def noop(node_id: str, depends_on: list[str] | None = None) -> dict[str, Any]:
    node: dict[str, Any] = {"id": node_id, "type": "function", "function": "std.noop"}
    if depends_on:
        node["depends_on"] = depends_on
    return node


def fanout_definition(width: int) -> dict[str, Any]:
    middle = [noop(f"n{i}", ["start"]) for i in range(width)]
    end = noop("end", [n["id"] for n in middle])
    return {"nodes": [noop("start"), *middle, end]}


def chain_definition(length: int) -> dict[str, Any]:
    return {"nodes": [noop(f"c{i}", [f"c{i - 1}"] if i else None) for i in range(length)]}


RETRY_FOREVER = {
    "nodes": [
        {
            "id": "f",
            "type": "function",
            "function": "std.fail",
            "input": {"message": "bench", "retryable": True},
            "retry_policy": {
                "max_attempts": 1_000_000_000,
                "initial_interval_seconds": 1,
                "backoff_coefficient": 1,
                "max_interval_seconds": 1,
                "jitter": False,
            },
        }
    ]
}

DELAY_HOUR = {"nodes": [{"id": "wait", "type": "delay", "seconds": 3600}, noop("after", ["wait"])]}


def make_version(name: str, definition: dict[str, Any]):
    from nodes.registry import function_exists
    from workflows.dsl.parser import parse_definition
    from workflows.models import WorkflowDefinition, WorkflowVersion

    parse_definition(definition, function_exists=function_exists)
    workflow = WorkflowDefinition.objects.create(name=name)
    return WorkflowVersion.objects.create(workflow=workflow, version=1, definition=definition)


# --- the bench -----------------------------------------------------------------------


class Bench:
    def __init__(self, variant: Variant, procs: Processes, stamps, raw_app):
        self.v = variant
        self.procs = procs
        self.stamps = stamps  # redis client on the stamp db
        self.raw = raw_app
        self.figures: dict[str, dict[str, Any]] = {}
        self.notes: dict[str, Any] = {}
        self.seq = 0

    # helpers ------------------------------------------------------------------------

    def key(self, what: str) -> str:
        self.seq += 1
        return f"bench:{what}:{self.seq}:{uuid.uuid4().hex[:8]}"

    def wait_engine(self, execution_id: object, timeout: float) -> None:
        from executions.engine.statuses import EXECUTION_TERMINAL
        from executions.models import Execution

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = Execution.objects.values_list("status", flat=True).get(pk=execution_id)
            if status in EXECUTION_TERMINAL:
                if status != "succeeded":
                    raise RuntimeError(f"execution {execution_id} ended {status}")
                return
            time.sleep(0.05)
            self.procs.check()
        raise TimeoutError(f"execution {execution_id} did not finish in {timeout}s")

    def wait_stamps(self, key: str, count: int, timeout: float) -> list[float]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.stamps.llen(key) >= count:
                return [float(x) for x in self.stamps.lrange(key, 0, -1)]
            time.sleep(0.02)
            self.procs.check()
        raise TimeoutError(f"raw celery: {key} has {self.stamps.llen(key)}/{count} stamps")

    def start_engine(self, version) -> tuple[float, object]:
        from executions.services.start import execution_start

        t0 = time.time()
        execution, _ = execution_start(version=version, input={})
        return t0, execution.pk

    def sig(self, *args: Any):
        return self.raw.signature("bench.raw_tasks.noop", args=args, immutable=True)

    def warm_up(self) -> None:
        version = make_version("warmup", {"nodes": [noop("a"), noop("b", ["a"])]})
        for _ in range(3):
            _, execution_id = self.start_engine(version)
            self.wait_engine(execution_id, 120)
        for _ in range(3):
            key = self.key("warm")
            self.sig(key).apply_async()
            self.wait_stamps(key, 1, 120)

    # a. throughput ------------------------------------------------------------------

    def throughput(self) -> None:
        from celery import chain, chord

        from executions.models import Event

        width = self.v.fanout
        total = width + 2
        version = make_version("fanout", fanout_definition(width))
        engine_runs, raw_runs = [], []
        for _ in range(self.v.fanout_runs):
            t0, execution_id = self.start_engine(version)
            self.wait_engine(execution_id, 900)
            end = Event.objects.get(execution_id=execution_id, type="workflow_completed")
            engine_runs.append(total / (end.timestamp.timestamp() - t0))

            key = self.key("chord")
            header = [self.sig() for _ in range(width)]
            t0 = time.time()
            chain(self.sig(), chord(header, self.sig(key))).apply_async()
            (finished,) = self.wait_stamps(key, 1, 900)
            raw_runs.append(total / (finished - t0))
        self.figures["throughput_engine_nodes_per_s"] = summary(engine_runs, "nodes/s")
        self.figures["throughput_raw_tasks_per_s"] = summary(raw_runs, "tasks/s")
        ratios = [e / r for e, r in zip(engine_runs, raw_runs, strict=True)]
        self.figures["throughput_ratio"] = summary(ratios, "engine/raw")
        self.notes["throughput_nodes"] = total

    # b. latency ---------------------------------------------------------------------

    def latency(self) -> None:
        from celery import chain

        from executions.models import Event

        length = self.v.chain
        version = make_version("chain", chain_definition(length))
        e50, e99, c50, c99, r50, r99 = [], [], [], [], [], []
        for _ in range(self.v.chain_runs):
            _, execution_id = self.start_engine(version)
            self.wait_engine(execution_id, 600)
            rows = Event.objects.filter(
                execution_id=execution_id, type__in=["task_started", "task_completed"]
            ).values_list("type", "node_id", "timestamp")
            started = {n: t.timestamp() for kind, n, t in rows if kind == "task_started"}
            done = {n: t.timestamp() for kind, n, t in rows if kind == "task_completed"}
            ids = [f"c{i}" for i in range(length)]
            hops = [started[b] - started[a] for a, b in zip(ids, ids[1:], strict=False)]
            gaps = [started[b] - done[a] for a, b in zip(ids, ids[1:], strict=False)]
            e50.append(percentile(hops, 50) * 1000)
            e99.append(percentile(hops, 99) * 1000)
            c50.append(percentile(gaps, 50) * 1000)
            c99.append(percentile(gaps, 99) * 1000)

            key = self.key("chain")
            chain(*[self.sig(key) for _ in range(length)]).apply_async()
            stamps = self.wait_stamps(key, length, 600)
            raw_hops = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
            r50.append(percentile(raw_hops, 50) * 1000)
            r99.append(percentile(raw_hops, 99) * 1000)
        self.figures["latency_engine_hop_p50_ms"] = summary(e50, "ms")
        self.figures["latency_engine_hop_p99_ms"] = summary(e99, "ms")
        self.figures["latency_engine_completed_to_started_p50_ms"] = summary(c50, "ms")
        self.figures["latency_engine_completed_to_started_p99_ms"] = summary(c99, "ms")
        self.figures["latency_raw_hop_p50_ms"] = summary(r50, "ms")
        self.figures["latency_raw_hop_p99_ms"] = summary(r99, "ms")
        self.figures["latency_p50_ratio"] = summary(
            [e / r for e, r in zip(e50, r50, strict=True)], "engine/raw"
        )
        self.figures["latency_p99_ratio"] = summary(
            [e / r for e, r in zip(e99, r99, strict=True)], "engine/raw"
        )

    # c. start latency ---------------------------------------------------------------

    def start_latency(self) -> None:
        import httpx
        from django.contrib.auth.models import User
        from rest_framework.authtoken.models import Token

        from executions.models import Event

        make_version("single", {"nodes": [noop("only")]})
        user = User.objects.create_user("bench", password="bench-pw")
        token = Token.objects.create(user=user)
        port = free_port()
        self.procs.spawn(
            "gunicorn",
            [sys.executable, "-m", "gunicorn", "config.wsgi", "-w", "2",
             "-b", f"127.0.0.1:{port}", "--log-level", "warning"],
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        headers = {"Authorization": f"Token {token.key}"}
        with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if client.get("/executions").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise TimeoutError("gunicorn did not answer")
                self.procs.check()
                time.sleep(0.2)
            for _ in range(5):  # warm both gunicorn workers
                client.post("/executions", json={"workflow": "single"})
            time.sleep(0.5)
            p50, p99, post50 = [], [], []
            for _ in range(self.v.start_runs):
                latencies, posts = [], []
                for _ in range(self.v.starts):
                    t0 = time.time()
                    response = client.post("/executions", json={"workflow": "single"})
                    posted = time.time()
                    if response.status_code != 201:
                        raise RuntimeError(f"POST /executions: {response.status_code}")
                    execution_id = response.json()["id"]
                    deadline = time.monotonic() + 30
                    while True:
                        started = (
                            Event.objects.filter(execution_id=execution_id, type="task_started")
                            .values_list("timestamp", flat=True)
                            .first()
                        )
                        if started is not None:
                            break
                        if time.monotonic() > deadline:
                            raise TimeoutError(f"{execution_id}: no task_started")
                        time.sleep(0.002)
                    latencies.append((started.timestamp() - t0) * 1000)
                    posts.append((posted - t0) * 1000)
                    time.sleep(0.02)  # let the node finish: starts do not queue up
                p50.append(percentile(latencies, 50))
                p99.append(percentile(latencies, 99))
                post50.append(percentile(posts, 50))
        self.procs.stop("gunicorn")
        self.figures["start_p50_ms"] = summary(p50, "ms")
        self.figures["start_p99_ms"] = summary(p99, "ms")
        self.figures["start_post_response_p50_ms"] = summary(post50, "ms")

    # d. history ---------------------------------------------------------------------

    def history(self) -> None:
        from django.db import connection, transaction
        from django.test.utils import CaptureQueriesContext

        from executions.models import Event, Execution
        from executions.services.advance import execution_advance

        version = make_version("retry-forever", RETRY_FOREVER)
        timings: dict[int, list[float]] = {}
        queries: dict[int, int] = {}
        for size in (self.v.history_short, self.v.history_long):
            execution_id, state = insert_history(version, size)
            attempt = state.nodes["f"].attempt + 1
            due = state.nodes["f"].next_retry_at
            per_run = []
            for _ in range(self.v.history_runs):
                samples = []
                for _ in range(self.v.advances_per_run):
                    with transaction.atomic():
                        # A timer fires (a fact), then one advance decides upon it:
                        # task_scheduled of the next attempt. Rolled back, so repeatable.
                        Event.objects.create(
                            execution_id=execution_id, seq=size + 1, type="timer_fired",
                            node_id="f", attempt=attempt, source="timer",
                            data={"kind": "retry", "due_at": due.isoformat()},
                            timestamp=due,
                        )  # fmt: skip
                        Execution.objects.filter(pk=execution_id).update(last_seq=size + 1)
                        with CaptureQueriesContext(connection) as captured:
                            t0 = time.perf_counter()
                            decided = execution_advance(execution_id=execution_id)
                            samples.append((time.perf_counter() - t0) * 1000)
                        assert decided == 1, decided
                        queries[size] = len(captured.captured_queries)
                        transaction.set_rollback(True)
                per_run.append(statistics.median(samples))
            timings[size] = per_run
        short, long = self.v.history_short, self.v.history_long
        self.figures[f"advance_{short}_events_ms"] = summary(timings[short], "ms")
        self.figures[f"advance_{long}_events_ms"] = summary(timings[long], "ms")
        self.figures["history_ratio"] = summary(
            [b / a for a, b in zip(timings[short], timings[long], strict=True)], "long/short"
        )
        self.notes["advance_queries"] = {str(k): v for k, v in queries.items()}

        for size in (*self.v.verify_sizes, *self.v.verify_once):
            runs = 1 if size in self.v.verify_once else self.v.verify_runs
            self.verify(version, size, runs)

    def verify(self, version, size: int, runs: int) -> None:
        from django.core.management import call_command

        from executions import store
        from executions.definitions import definition_for
        from executions.engine.verify import verify

        t0 = time.perf_counter()
        execution_id, _ = insert_history(version, size)
        self.notes[f"history_{size}_build_s"] = round(time.perf_counter() - t0, 1)
        definition = definition_for(version.pk)
        core, command = [], []
        for _ in range(runs):
            rows = store.events_of(execution_id).iterator(chunk_size=5000)
            events = [store.to_engine(row) for row in rows]
            t0 = time.perf_counter()
            found = verify(definition, events, execution_id=str(execution_id))
            core.append(size / (time.perf_counter() - t0))
            if found is not None:
                raise RuntimeError(f"synthetic history does not verify: {found}")
            del events
            out, err = io.StringIO(), io.StringIO()
            t0 = time.perf_counter()
            call_command(
                "replay_execution", str(execution_id), "--verify", "--quiet",
                stdout=out, stderr=err,
            )  # fmt: skip
            command.append(size / (time.perf_counter() - t0))
            if "verified" not in out.getvalue():
                raise RuntimeError(f"replay_execution --verify: {out.getvalue()}")
        self.figures[f"verify_{size}_events_per_s"] = summary(core, "events/s")
        self.figures[f"replay_verify_command_{size}_events_per_s"] = summary(command, "events/s")

    # e. many in flight --------------------------------------------------------------

    def in_flight(self) -> None:
        from django.db import transaction

        from executions.services.start import execution_start
        from executions.services.sweep import sweep

        version = make_version("delay-hour", DELAY_HOUR)
        t0 = time.perf_counter()
        left = self.v.in_flight
        while left:
            batch = min(left, 250)
            with transaction.atomic():
                for _ in range(batch):
                    execution_start(version=version, input={})
            left -= batch
        self.notes["in_flight_created_s"] = round(time.perf_counter() - t0, 1)
        time.sleep(3)  # a few sweeps by beat + worker over the waiting executions
        ticks = []
        for _ in range(self.v.sweep_runs):
            t0 = time.perf_counter()
            report = sweep()
            ticks.append((time.perf_counter() - t0) * 1000)
            time.sleep(0.1)
        self.notes["sweep_report"] = vars(report)
        self.figures["sweep_tick_ms"] = summary(ticks, "ms")
        worker = self.procs.procs["worker"].pid
        beat = self.procs.procs["beat"].pid
        main, kids, beats = [], [], []
        for _ in range(3):
            main.append(rss_kb(worker) / 1024)
            kids.append(sum(rss_kb(pid) for pid in children(worker)) / 1024)
            beats.append(rss_kb(beat) / 1024)
            time.sleep(1)
        self.figures["rss_worker_main_mb"] = summary(main, "MB")
        self.figures["rss_worker_children_mb"] = summary(kids, "MB")
        self.figures["rss_beat_mb"] = summary(beats, "MB")
        self.notes["worker_children"] = len(children(worker))


def synth_history(definition, execution_id: str, size: int) -> list:
    """A valid log of `size` events (size % 5 == 0): a node that fails and retries.

    Workers' and timers' facts are written here; every engine event is what decide()
    returns, so `verify` re-derives them all. Ends with task_retry_scheduled.
    """
    from executions.engine.decide import decide
    from executions.engine.events import Event, EventType, Source
    from executions.engine.fold import apply_event
    from executions.engine.state import ExecutionState

    assert size % 5 == 0 and size >= 5, size
    attempts = size // 5
    state = ExecutionState(execution_id)
    events: list[Event] = []
    clock = [datetime(2026, 1, 1, tzinfo=UTC)]

    def add(kind, node, attempt, data, source, step: float) -> None:
        clock[0] += timedelta(seconds=step)
        event = Event(len(events) + 1, kind, clock[0], node, attempt, data, source)
        apply_event(state, event)
        events.append(event)

    def engine(expected: EventType) -> None:
        decisions = decide(definition, state)
        assert [d.type for d in decisions] == [expected], decisions
        (d,) = decisions
        add(d.type, d.node_id, d.attempt, d.data, Source.ENGINE, 0.001)

    start = {"input": {}, "workflow": "retry-forever", "version": 1, "replay_of": None}
    add(EventType.WORKFLOW_STARTED, None, None, start, Source.API, 0)
    engine(EventType.TASK_SCHEDULED)
    error = {"type": "NodeError", "message": "bench", "retryable": True}
    for k in range(1, attempts + 1):
        add(EventType.TASK_STARTED, "f", k, {"worker": "bench"}, Source.WORKER, 0.01)
        add(EventType.TASK_FAILED, "f", k, {"error": error}, Source.WORKER, 0.01)
        engine(EventType.TASK_RETRY_SCHEDULED)
        if k < attempts:
            due = events[-1].data["due_at"]
            fired = {"kind": "retry", "due_at": due}
            add(EventType.TIMER_FIRED, "f", k + 1, fired, Source.TIMER, 1.0)
            engine(EventType.TASK_SCHEDULED)
    assert len(events) == size, (len(events), size)
    return events


def insert_history(version, size: int):
    """An execution whose log is synth_history(size), stored as the store would have it."""
    from django.db import connection, transaction
    from psycopg.types.json import Jsonb

    from executions.definitions import definition_for
    from executions.engine.fold import apply_event, fold
    from executions.engine.state import ExecutionState
    from executions.models import Event, Execution
    from executions.projections import create_tasks, project

    definition = definition_for(version.pk)
    execution_id = uuid.uuid4()
    events = synth_history(definition, str(execution_id), size)
    state = ExecutionState(str(execution_id))
    for event in events:  # fold in place (fold() would copy)
        apply_event(state, event)
    snapshot_seq = size - size % 50
    snapshot = fold(events[:snapshot_seq], execution_id=str(execution_id)) if snapshot_seq else None
    with transaction.atomic():
        execution = Execution.objects.create(
            id=execution_id, workflow_id=version.workflow_id, version=version, input={},
            last_seq=size, decided_seq=size,
            snapshot=snapshot.to_dict() if snapshot else None, snapshot_seq=snapshot_seq,
        )  # fmt: skip
        create_tasks(execution, definition)
        project(execution, state, ["f"])
        table = Event._meta.db_table
        columns = "execution_id, seq, type, node_id, attempt, data, timestamp, source"
        with connection.cursor() as cursor:
            raw = cursor.cursor  # the psycopg cursor under Django's wrapper
            with raw.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for e in events:
                    copy.write_row(
                        (execution_id, e.seq, str(e.type), e.node_id, e.attempt,
                         Jsonb(e.data), e.timestamp, str(e.source))
                    )  # fmt: skip
    return execution_id, state


# --- report --------------------------------------------------------------------------


def verdicts(figures: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {}
    for name, (op, target) in TARGETS.items():
        names = [name]
        if name == "verify_events_per_s":
            names = [n for n in figures if n.startswith("verify_") and n.endswith("_per_s")]
        for figure in names:
            if figure not in figures:
                continue
            value = figures[figure]["median"]
            ok = value >= target if op == ">=" else value <= target
            out[figure] = {"target": f"{op} {target:g}", "pass": ok}
    return out


def render(result: dict[str, Any]) -> str:
    lines = [
        f"bench {result['variant']}  ({result['machine']['nproc']} cpu, "
        f"{result['machine']['cpu_model']}, {result['machine']['ram_gb']} GB)",
        f"{'figure':<48} {'median':>12} {'range (min-max)':>25}  {'unit':<11} target",
    ]
    for name, fig in result["figures"].items():
        verdict = result["verdicts"].get(name)
        mark = f"{verdict['target']:<10} {'PASS' if verdict['pass'] else 'MISS'}" if verdict else ""
        span = f"{_fmt(fig['min'])} - {_fmt(fig['max'])}"
        lines.append(f"{name:<48} {_fmt(fig['median']):>12} {span:>25}  {fig['unit']:<11} {mark}")
    return "\n".join(lines)


def _fmt(value: float) -> str:
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.3f}"


SCENARIOS: dict[str, Callable[[Bench], None]] = {
    "throughput": Bench.throughput,
    "latency": Bench.latency,
    "start": Bench.start_latency,
    "history": Bench.history,
    "in_flight": Bench.in_flight,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run")
    parser.add_argument("variant", choices=sorted(VARIANTS), nargs="?", default="smoke")
    parser.add_argument(
        "--only", default="", help=f"comma-separated subset of: {', '.join(SCENARIOS)}"
    )
    parser.add_argument("--output", default="", help="write the JSON here as well")
    args = parser.parse_args(argv)
    variant = VARIANTS[args.variant]
    only = [s for s in args.only.split(",") if s] or list(SCENARIOS)
    unknown = set(only) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenarios: {', '.join(sorted(unknown))}")

    database_url = bench_database_url(variant.name)
    broker_db, result_db = REDIS_DBS[variant.name]
    broker_url = os.environ.get("BENCH_BROKER_URL") or redis_url(broker_db)
    result_url = os.environ.get("BENCH_RESULT_URL") or redis_url(result_db)
    started = time.time()
    print(f"==> bench {variant.name}: database {urlsplit(database_url).path.lstrip('/')}, "
          f"broker {broker_url}, raw results {result_url}", flush=True)  # fmt: skip
    recreate_database(database_url)
    log_dir = Path(tempfile.mkdtemp(prefix="workflow-bench."))
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "CELERY_BROKER_URL": broker_url,
        "BENCH_BROKER_URL": broker_url,
        "BENCH_RESULT_URL": result_url,
        "WORKFLOW_VAR_DIR": str(log_dir / "var"),
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }
    os.environ.update(env)

    import django

    django.setup()
    import redis
    from django.core.management import call_command

    from bench.raw_app import QUEUE
    from bench.raw_app import app as raw_app
    from config.celery import app as engine_app

    engine_app.set_current()
    call_command("migrate", verbosity=0)
    redis.Redis.from_url(broker_url).flushdb()
    stamps = redis.Redis.from_url(result_url)
    stamps.flushdb()

    procs = Processes(env=env, log_dir=log_dir)
    common = ["--concurrency", "2", "--prefetch-multiplier", "1", "-l", "warning",
              "--without-gossip", "--without-mingle", "--without-heartbeat"]  # fmt: skip
    bench = None
    errors: dict[str, str] = {}
    try:
        procs.celery("worker", "config", "worker", "-Q", "orchestrator,nodes", "-n",
                     "engine@%h", *common)  # fmt: skip
        procs.celery("beat", "config", "beat", "-l", "warning", "-s",
                     str(log_dir / "beat-schedule"))  # fmt: skip
        procs.celery("raw", "bench.raw_app", "worker", "-Q", QUEUE, "-n", "raw@%h", *common)
        bench = Bench(variant, procs, stamps, raw_app)
        print("==> warming up both worker pools", flush=True)
        bench.warm_up()
        for name in only:
            t0 = time.perf_counter()
            print(f"==> {name}", flush=True)
            try:
                SCENARIOS[name](bench)
            except Exception as exc:  # keep the other scenarios' figures
                errors[name] = f"{type(exc).__name__}: {exc}"
                traceback.print_exc()
            print(f"    {time.perf_counter() - t0:.1f}s", flush=True)
    except BaseException:
        print(f"bench: logs kept in {log_dir}", file=sys.stderr)
        raise
    finally:
        procs.stop_all()

    result = {
        "variant": variant.name,
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "duration_s": round(time.time() - started, 1),
        "machine": machine(),
        "setup": {
            "database": urlsplit(database_url).path.lstrip("/"),
            "broker": broker_url,
            "raw_result_backend": result_url,
            "engine_workers": "1 x `celery -A config worker -Q orchestrator,nodes "
            "--concurrency 2` (prefork, prefetch 1, acks late) + 1 x `celery -A config beat`",
            "raw_workers": "1 x `celery -A bench.raw_app worker --concurrency 2` (prefork, "
            "prefetch 1, acks late)",
            "api": "gunicorn config.wsgi -w 2 (sync)",
            "sizes": asdict(variant),
        },
        "figures": bench.figures,
        "verdicts": verdicts(bench.figures),
        "notes": bench.notes,
        "errors": errors,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    text = json.dumps(result, indent=2, default=str)
    (RESULTS / f"{variant.name}-{stamp}.json").write_text(text)
    (RESULTS / f"latest-{variant.name}.json").write_text(text)
    if args.output:
        Path(args.output).write_text(text)
    print(render(result))
    print(f"==> wrote bench/results/latest-{variant.name}.json ({result['duration_s']}s)")
    for name, error in errors.items():
        print(f"bench: scenario {name} failed: {error} (logs in {log_dir})", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
