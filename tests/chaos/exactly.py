"""The exactly-once scenario: executions of two parallel steps that each write one ledger row
keyed by (execution, node), then sleep, while the monkey kill -9s a worker every few seconds
(no server restarts). `tx` is a transactional function: its row commits only with its
recorded result, so it must end with exactly one row per execution, the row of the attempt
whose result was recorded, however often its attempts were killed after writing. `plain`
is the same body as a plain function: a kill after its write leaves that row behind, so its
count shows what the kills would have duplicated. The report gives both counts side by side.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from executions.models import Event, Execution
from tests.chaos.campaign import Submitter
from tests.chaos.checks import SHOWN, log_checks
from tests.chaos.cluster import Cluster
from tests.chaos.common import db, say
from tests.chaos.monkey import Monkey
from tests.ledger.models import Entry

if TYPE_CHECKING:
    from tests.chaos.run import Variant

WORKFLOW = "chaos-exactly"
#: The transactional step and its plain twin.
TX, PLAIN = "tx", "plain"
#: How long each step sleeps after its write: where most kills land.
STEP_SECONDS = 1.0
#: A killed attempt is timed out this soon after its worker dies.
HEARTBEAT_SECONDS = 3
RETRY_POLICY = {"max_attempts": 20, "initial_interval_seconds": 0.3, "max_interval_seconds": 2}


def definition(marks: Path) -> dict[str, Any]:
    def step(node_id: str, function: str) -> dict[str, Any]:
        return {
            "id": node_id,
            "type": "function",
            "function": function,
            "input": {"seconds": STEP_SECONDS, "mark": str(marks)},
            "heartbeat_timeout_seconds": HEARTBEAT_SECONDS,
        }

    return {
        "nodes": [step(TX, "ledger.insert"), step(PLAIN, "ledger.insert_plain")],
        "retry_policy": RETRY_POLICY,
    }


class ExactlyOnce:
    def __init__(self, cluster: Cluster, scenario: Variant, rng: random.Random, run_dir: Path):
        self.cluster, self.scenario, self.rng = cluster, scenario, rng
        self.marks = run_dir / "steps.log"

    def run(self, client, report: dict[str, Any]) -> bool:
        created = client.post(
            "/workflows", {"name": WORKFLOW, "definition": definition(self.marks)}, format="json"
        )
        assert created.status_code == 201, created.content
        self.cluster.start(workers=3)
        scenario = self.scenario
        submitter = Submitter(
            client, WORKFLOW, scenario.executions, scenario.in_flight, f"exactly-{time.time_ns()}"
        )
        # Kills only: this scenario is about a worker dying inside a step's transaction.
        monkey = Monkey(self.cluster, scenario.kill_every, self.rng, "", "")
        monkey.restarts = False
        began = time.monotonic()
        submitter.start()
        monkey.start()
        try:
            finished = self._wait(submitter, began)
        finally:
            monkey.stop.set()
            monkey.join(timeout=120)
            self.cluster.stop()
        ids = list(submitter.inputs)
        say(f"exactly-once: all over after {time.monotonic() - began:.0f}s; checking")
        problems, figures = db(lambda: check(ids, self.marks))
        report.update(
            executions=len(ids),
            duration_seconds=round(time.monotonic() - began, 1),
            kills=monkey.kills,
            deaths=monkey.deaths,
            figures=figures,
            checks={
                name: {"count": len(found), "examples": found[:SHOWN]}
                for name, found in problems.items()
            },
        )
        errors = [repr(e) for e in (submitter.error, monkey.error) if e is not None]
        if not finished:
            errors.append("executions still unfinished at the end")
        report["errors"] = errors
        return not errors and not any(problems.values())

    def _wait(self, submitter: Submitter, began: float) -> bool:
        last_print = 0.0
        while True:
            time.sleep(1)
            if submitter.error:
                say(f"exactly-once: aborting: {submitter.error!r}")
                return False
            submitted = len(submitter.inputs)
            done = submitted - submitter.unfinished()
            now = time.monotonic()
            if now - last_print >= 10:
                say(f"exactly-once: t={now - began:.0f}s submitted {submitted} done {done}")
                last_print = now
            if submitter.finished_at is not None and done == self.scenario.executions:
                return True
            if now - began > self.scenario.timeout:
                say(f"exactly-once: timeout, {self.scenario.executions - done} unfinished")
                return False


def check(ids: list[str], marks: Path) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """(problems by check, figures) for the scenario's executions."""
    rows: dict[str, Counter[str]] = {TX: Counter(), PLAIN: Counter()}
    kept: dict[tuple[str, str], list[int]] = {}
    for execution_id, node_id, attempt in Entry.objects.filter(execution_id__in=ids).values_list(
        "execution_id", "node_id", "attempt"
    ):
        rows[node_id][execution_id] += 1
        kept.setdefault((execution_id, node_id), []).append(attempt)
    completed: Counter[tuple[str, str]] = Counter()
    recorded: dict[tuple[str, str], int] = {}
    statuses = Event.objects.filter(execution_id__in=ids, type="task_completed")
    for execution_id, node_id, attempt in statuses.values_list(
        "execution_id", "node_id", "attempt"
    ):
        completed[(str(execution_id), node_id)] += 1
        recorded[(str(execution_id), node_id)] = attempt
    unsucceeded = Execution.objects.filter(pk__in=ids).exclude(status="succeeded")
    runs = Counter(tuple(line.split()) for line in _lines(marks))
    # A transactional attempt that wrote its row (its mark) and has no recorded result:
    # its worker was killed (or its lease lost) after the write, and the write rolled back.
    undone = [(e, n, a) for (e, n, a) in runs if n == TX and recorded.get((e, n)) != int(a)]
    problems = {
        "every exactly-once execution succeeded": [
            f"{pk}: {status}" for pk, status in unsucceeded.values_list("pk", "status")
        ],
        "transactional step: exactly one row per execution": [
            f"{e}: {rows[TX][e]} rows" for e in ids if rows[TX][e] != 1
        ],
        "transactional step: its row is the attempt whose result was recorded": [
            f"{e}: rows of attempts {kept.get((e, TX))}, result of {recorded.get((e, TX))}"
            for e in ids
            if kept.get((e, TX)) != [recorded.get((e, TX))]
        ],
        "one recorded result per step per execution": [
            f"{e} {n}: {completed[(e, n)]}"
            for e in ids
            for n in (TX, PLAIN)
            if completed[(e, n)] != 1
        ],
        "kills landed after a transactional step's write (else the run proved nothing)": (
            [] if undone else ["no transactional attempt was killed after writing its row"]
        ),
        **log_checks(ids),
    }
    figures = {
        "rows_per_execution": {
            name: dict(sorted(Counter(rows[name][e] for e in ids).items())) for name in (TX, PLAIN)
        },
        "rows": {name: sum(rows[name].values()) for name in (TX, PLAIN)},
        "step_runs": {name: sum(1 for (_, n, _) in runs if n == name) for name in (TX, PLAIN)},
        "transactional_writes_rolled_back": len(undone),
        "timeouts": Event.objects.filter(execution_id__in=ids, type="task_timed_out").count(),
    }
    return problems, figures


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def print_summary(report: dict[str, Any]) -> None:
    figures = report.get("figures", {})
    per = figures.get("rows_per_execution", {})
    print()
    print(f"exactly-once steps: {report.get('executions')} executions, {report.get('kills')} kills")
    print(f"  rows per execution, transactional   {per.get(TX)}  (rows: count of executions)")
    print(f"  rows per execution, plain           {per.get(PLAIN)}")
    print(f"  step runs (transactional, plain)    {figures.get('step_runs')}")
    print(
        f"  transactional writes rolled back    {figures.get('transactional_writes_rolled_back')}"
    )
    print(f"  attempts timed out                  {figures.get('timeouts')}")
