"""What a chaos run must prove, checked against the database, the run log of node bodies
and the HTTP server's request counts. Each check returns problems (empty: it holds)."""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.apps import apps
from django.db.models import Count, Max, Min, QuerySet

from executions.definitions import definition_for
from executions.engine.events import RESULT_TYPES
from executions.engine.verify import verify
from executions.kernel.log import events_of, state_at, to_engine
from executions.kernel.projections import differences
from executions.metrics import seed
from executions.models import Attempt, AttemptStatus, Event, Execution, Task
from tests.chaos.limits import Interval, max_overlap, out_of_order, over_limit
from tests.chaos.workload import (
    CONCURRENCY_LIMIT,
    HEARTBEAT_SECONDS,
    HTTP_NODE,
    POOL,
    POOL_NODES,
    POOL_SLOTS,
    WORK_NODES,
    expected_output,
    group_of,
)

#: Problems listed per check before the rest are only counted.
SHOWN = 10


def check_all(
    inputs: Mapping[str, int], run_log: Path, http_requests: Mapping[str, int]
) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """(problems by check, figures) for the executions started (id -> input n)."""
    attempts = {
        (str(e), n): a
        for e, n, a in Task.objects.values_list("execution_id", "node_id", "attempts")
    }
    problems = {
        "every execution succeeded with the right output": _outcomes(inputs),
        **log_checks(inputs),
        "task_started per node <= recorded attempts": _started_within(attempts),
        "node bodies ran <= recorded attempts, once per started attempt": _bodies(
            run_log, attempts
        ),
        "HTTP requests per Idempotency-Key <= recorded attempts": _http(http_requests, attempts),
        "never more than the limit running per concurrency key": _concurrency(inputs),
        "executions of one key let in first-in first-out": _fifo(inputs),
        "never more attempts running in the pool than its slots": _pool(),
        "/metrics totals equal a recount of the tables": seed.drift(apps.get_model),
    }
    figures = {**_figures(run_log, http_requests), "limit_peaks": _peaks(inputs)}
    return {k: v for k, v in problems.items()}, figures


def _outcomes(inputs: Mapping[str, int]) -> list[str]:
    rows = {str(pk): (s, o) for pk, s, o in Execution.objects.values_list("id", "status", "output")}
    problems = []
    for execution_id, n in inputs.items():
        status, output = rows.get(execution_id, ("missing", None))
        if status != "succeeded":
            problems.append(f"{execution_id}: {status}")
        elif output != expected_output(n):
            problems.append(f"{execution_id}: output {output!r} != {expected_output(n)!r}")
    return problems


def log_checks(ids: Iterable[str]) -> dict[str, list[str]]:
    """What every scenario's executions (their ids) must keep, whatever they ran."""
    executions = Execution.objects.filter(pk__in=list(ids))
    return {
        "no attempt has two results": _two_results(),
        "seqs are contiguous 1..last_seq": _contiguous(),
        "projections equal the folded log": _projections(executions),
        "every decision replays (--verify)": _replays(executions),
        "no attempt left scheduled or running": _leftovers(),
    }


def _two_results() -> list[str]:
    doubled = (
        Event.objects.filter(type__in=sorted(RESULT_TYPES))
        .values("execution_id", "node_id", "attempt")
        .annotate(results=Count("id"))
        .filter(results__gt=1)
    )
    return [f"{r['execution_id']} {r['node_id']}#{r['attempt']}: {r['results']}" for r in doubled]


def _contiguous() -> list[str]:
    last = dict(Execution.objects.values_list("id", "last_seq"))
    problems = []
    spans = Event.objects.values("execution_id").annotate(
        n=Count("id"), lo=Min("seq"), hi=Max("seq")
    )
    for span in spans:
        expected = last.pop(span["execution_id"])
        if not (span["n"] == span["hi"] == expected and span["lo"] == 1):
            problems.append(f"{span['execution_id']}: {span} but last_seq {expected}")
    problems += [f"{pk}: no events at all" for pk in last]
    return problems


def _projections(executions: QuerySet[Execution]) -> list[str]:
    problems = []
    for execution in executions:
        drift = differences(execution, state_at(execution.pk))
        if drift:
            problems.append(f"{execution.pk}: {drift[:3]}")
    return problems


def _replays(executions: QuerySet[Execution]) -> list[str]:
    problems = []
    for execution in executions:
        rows = [to_engine(r) for r in events_of(execution.pk)]
        found = verify(definition_for(execution.version_id), rows, execution_id=str(execution.pk))
        if found is not None:
            problems.append(f"{execution.pk}: {found}")
    return problems


def _started() -> Counter[tuple[str, str, int]]:
    rows = Event.objects.filter(type="task_started").values_list(
        "execution_id", "node_id", "attempt"
    )
    return Counter((str(e), n, a) for e, n, a in rows)


def _started_within(attempts: Mapping[tuple[str, str], int]) -> list[str]:
    per_attempt = _started()
    problems = [f"{k}: task_started {c} times" for k, c in per_attempt.items() if c > 1]
    per_node = Counter((e, n) for e, n, _ in per_attempt.elements())
    problems += [
        f"{key}: {count} task_started > {attempts.get(key, 0)} attempts"
        for key, count in per_node.items()
        if count > attempts.get(key, 0)
    ]
    return problems


def read_run_log(run_log: Path) -> Counter[tuple[str, str, int]]:
    runs: Counter[tuple[str, str, int]] = Counter()
    if run_log.exists():
        for line in run_log.read_text().splitlines():
            execution_id, node_id, attempt, _pid = line.split()
            runs[(execution_id, node_id, int(attempt))] += 1
    return runs


def _bodies(run_log: Path, attempts: Mapping[tuple[str, str], int]) -> list[str]:
    runs = read_run_log(run_log)
    started = _started()
    problems = [f"{k}: body ran {c} times in one attempt" for k, c in runs.items() if c > 1]
    problems += [f"{k}: body ran without task_started" for k in runs if k not in started]
    per_node = Counter((e, n) for e, n, _ in runs.elements())
    problems += [
        f"{key}: body ran {count} times > {attempts.get(key, 0)} attempts"
        for key, count in per_node.items()
        if count > attempts.get(key, 0)
    ]
    succeeded = {(e, n) for (e, n), a in attempts.items() if n in WORK_NODES and a}
    problems += [f"{key}: no recorded run of its body" for key in succeeded - set(per_node)]
    return problems


def _http(requests: Mapping[str, int], attempts: Mapping[tuple[str, str], int]) -> list[str]:
    problems = []
    for (execution_id, node_id), tries in attempts.items():
        if node_id != HTTP_NODE:
            continue
        sent = requests.get(f"{execution_id}:{node_id}", 0)
        if not 1 <= sent <= tries:
            problems.append(f"{execution_id}: {sent} requests for {tries} attempts")
    return problems


def _leftovers() -> list[str]:
    open_ = Attempt.objects.filter(status__in=[AttemptStatus.SCHEDULED, AttemptStatus.RUNNING])
    return [str(a) for a in open_[:SHOWN]]


_ENDINGS = ("workflow_completed", "workflow_failed", "workflow_cancelled")


#: One execution of a key: (created_at, id, workflow_started, its ending) from the log.
Span = tuple[datetime | None, str, datetime | None, datetime | None]


def _execution_spans(inputs: Mapping[str, int]) -> dict[str, list[Span]]:
    """Per concurrency key: each execution's (created_at, id, workflow_started, ending)."""
    created = {str(pk): at for pk, at in Execution.objects.values_list("id", "created_at")}
    marks: dict[str, dict[str, datetime]] = {}
    rows = Event.objects.filter(type__in=["workflow_started", *_ENDINGS], node_id__isnull=True)
    for execution_id, kind, at in rows.values_list("execution_id", "type", "timestamp"):
        marks.setdefault(str(execution_id), {})[
            "start" if kind == "workflow_started" else "end"
        ] = at
    spans: dict[str, list[Span]] = {}
    for execution_id, n in inputs.items():
        mark = marks.get(execution_id, {})
        key = group_of(n)
        row = (created.get(execution_id), execution_id, mark.get("start"), mark.get("end"))
        spans.setdefault(key, []).append(row)
    return spans


def _concurrency(inputs: Mapping[str, int]) -> list[str]:
    """From the logs alone: between workflow_started and its ending an execution holds one
    of its key's slots (the admission of the next is stamped after that ending commits)."""
    groups: dict[str, list[Interval]] = {
        key: [(start, end) for _, _, start, end in rows if start is not None]
        for key, rows in _execution_spans(inputs).items()
    }
    found = over_limit(groups, CONCURRENCY_LIMIT, "concurrency key")
    if not any(len(intervals) > CONCURRENCY_LIMIT for intervals in groups.values()):
        found.append("no key had more executions than its limit: the run proved nothing")
    return found


def _fifo(inputs: Mapping[str, int]) -> list[str]:
    queues = {
        key: [((created, pk), start) for created, pk, start, _ in sorted(rows) if start]
        for key, rows in _execution_spans(inputs).items()
    }
    return out_of_order(queues)


def _peaks(inputs: Mapping[str, int]) -> dict[str, int]:
    """The most executions of each key, and attempts in the pool, seen at once: at their
    limits, the run really made work wait."""
    peaks = {
        f"key {key} (limit {CONCURRENCY_LIMIT})": max_overlap((s, e) for _, _, s, e in rows if s)[0]
        for key, rows in sorted(_execution_spans(inputs).items())
    }
    peaks[f"pool {POOL} ({POOL_SLOTS} slots)"] = max_overlap(_pool_intervals())[0]
    return peaks


def _pool_intervals() -> list[Interval]:
    rows = Event.objects.filter(node_id__in=POOL_NODES, type__in=["task_started", *RESULT_TYPES])
    marks: dict[tuple[str, str, int], dict[str, datetime]] = {}
    fields = ("execution_id", "node_id", "attempt", "type", "timestamp")
    for e, n, a, kind, at in rows.values_list(*fields):
        marks.setdefault((str(e), n, a), {})["start" if kind == "task_started" else "end"] = at
    return [(m["start"], m.get("end")) for m in marks.values() if "start" in m]


def _pool() -> list[str]:
    """Each attempt of a pool node holds a slot from task_started to its one result (a
    killed holder's result is the sweeper's timeout, after its lease lapsed)."""
    intervals = _pool_intervals()
    found = over_limit({POOL: intervals}, POOL_SLOTS, "pool")
    if len(intervals) <= POOL_SLOTS:
        found.append(f"only {len(intervals)} pool attempts: the run proved nothing")
    return found


def _figures(run_log: Path, http_requests: Mapping[str, int]) -> dict[str, Any]:
    kinds = Counter(dict(Event.objects.values_list("type").annotate(n=Count("id"))))
    per_node = Task.objects.filter(node_id__in=[*WORK_NODES, HTTP_NODE])
    attempts = list(per_node.values_list("attempts", flat=True))
    return {
        "events": sum(kinds.values()),
        "attempts": sum(Task.objects.values_list("attempts", flat=True)),
        "attempts_started": kinds["task_started"],
        "retries": kinds["task_retry_scheduled"],
        "timeouts": kinds["task_timed_out"],
        "failures": kinds["task_failed"],
        "max_attempts_of_a_node": max(attempts, default=0),
        "nodes_retried": sum(1 for a in attempts if a > 1),
        "body_runs": sum(read_run_log(run_log).values()),
        "http_requests": sum(http_requests.values()),
    }


def timeout_causes(
    killed_pids: set[int], outages: Iterable[tuple[datetime, datetime]]
) -> dict[str, int]:
    """Why each attempt was timed out: its worker process was one we killed, or its lease
    lapsed while (or just after) a server was restarting, or neither (worth a look)."""
    workers = {
        (str(e), n, a): w
        for e, n, a, w in Attempt.objects.values_list(
            "execution_id", "node_id", "attempt", "worker_id"
        )
    }
    slack = timedelta(seconds=3 * HEARTBEAT_SECONDS)
    windows = [(start, end + slack) for start, end in outages]
    causes: Counter[str] = Counter()
    timed_out = Event.objects.filter(type="task_timed_out")
    for e, n, a, at in timed_out.values_list("execution_id", "node_id", "attempt", "timestamp"):
        worker = workers.get((str(e), n, a), "")
        pid = int(worker.split(":")[1]) if worker.count(":") >= 2 else None
        if pid in killed_pids:
            causes["worker killed"] += 1
        elif any(start <= at <= end for start, end in windows):
            causes["server restart"] += 1
        else:
            causes["other"] += 1
    return dict(causes)


_SWEEP = re.compile(r"Task executions\.tasks\.sweep\[[^\]]+\] succeeded in [^:]+: (\{.*\})")
_ERROR = re.compile(r"Task ([\w.]+)\[[^\]]+\] raised unexpected: (\w+)")
#: Warnings of executions/worker/runtime.py: a worker kept going through a database outage.
_RETRIED = {"lease renewal of attempt": "lease renewals", "recording attempt": "results"}


def _message(line: str) -> str:
    """A log line's message: workers log JSON lines by default (WORKFLOW_LOG_FORMAT), the
    plain format is the line itself."""
    if line.startswith("{"):
        try:
            record = json.loads(line)
        except ValueError:
            return line
        if isinstance(record, dict) and isinstance(record.get("message"), str):
            return record["message"]
    return line


def worker_log_figures(log_dir: Path) -> dict[str, Any]:
    """What the sweepers did (work the broker forgot) and which task errors the workers saw
    (a task that failed on a restarting server is recovered by the sweeper)."""
    swept: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    retried: Counter[str] = Counter()
    for log in log_dir.glob("worker-*.log"):
        for line in map(_message, log.read_text(errors="replace").splitlines()):
            if found := _SWEEP.search(line):
                swept.update(ast.literal_eval(found.group(1)))
            elif found := _ERROR.search(line):
                errors[f"{found.group(1)}: {found.group(2)}"] += 1
            elif kind := next((v for k, v in _RETRIED.items() if line.startswith(k)), None):
                retried[kind] += 1
    return {"sweeper": dict(swept), "task_errors": dict(errors), "db_retries": dict(retried)}
