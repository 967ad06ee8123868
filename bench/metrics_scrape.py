"""How long a /metrics scrape takes against a large history: the incremental totals
(executions/metrics/ledger.py) against the scrape as it was before them (a GROUP BY over the whole
executions and tasks tables and a SUM over executions, every scrape).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/wf_bench_metrics \\
        python -m bench.metrics_scrape --tasks 100000

Fills the database (once) with executions of 100 ended tasks each through bulk inserts,
seeds the totals with `metrics_rebuild`, then times, best and median of --repeat:
the old queries; a scrape with nothing new; a scrape after one new execution has run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid
from collections.abc import Callable

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DEBUG", "1")

TASKS_PER_EXECUTION = 100


def timed(run: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(best, median) in milliseconds."""
    samples = []
    for _ in range(repeat):
        began = time.perf_counter()
        run()
        samples.append((time.perf_counter() - began) * 1000)
    return min(samples), statistics.median(samples)


def fill(tasks: int) -> None:
    from django.utils import timezone

    from executions.models import Execution, Task
    from workflows.models import WorkflowDefinition, WorkflowVersion

    have = Task.objects.count()
    if have >= tasks:
        return
    nodes = [{"id": f"n{i}", "type": "function", "function": "std.noop"} for i in range(100)]
    workflow = WorkflowDefinition.objects.create(name=f"bench-{uuid.uuid4().hex[:8]}")
    version = WorkflowVersion.objects.create(
        workflow=workflow, version=1, definition={"nodes": nodes}
    )
    now = timezone.now()
    for _ in range((tasks - have) // TASKS_PER_EXECUTION):
        execution = Execution.objects.create(
            workflow=workflow, version=version, status="succeeded", last_seq=302,
            decided_seq=302, started_at=now, ended_at=now,
        )  # fmt: skip
        Task.objects.bulk_create(
            Task(execution=execution, node_id=node["id"], type="function", status="succeeded",
                 attempts=1)
            for node in nodes
        )  # fmt: skip


def old_scrape() -> None:
    """The queries every scrape ran before the incremental totals."""
    from django.db.models import Count, Sum

    from executions.models import Execution, Task

    list(Execution.objects.order_by().values("status").annotate(n=Count("pk")))
    list(Task.objects.order_by().values("status").annotate(n=Count("pk")))
    Execution.objects.aggregate(n=Sum("last_seq"))


def one_execution() -> None:
    """One small execution run in-process through the services a worker calls."""
    from executions.models import Attempt, AttemptStatus
    from executions.services.attempts import attempt_claim, attempt_complete
    from tests.factories import start

    start({"nodes": [{"id": "a", "type": "function", "function": "std.noop"}]})
    for pk in Attempt.objects.filter(status=AttemptStatus.SCHEDULED).values_list("pk", flat=True):
        if attempt_claim(attempt_id=pk, worker_id="bench"):
            attempt_complete(attempt_id=pk, worker_id="bench", output=None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    django.setup()
    from django.core.management import call_command

    from executions.metrics.metrics import metrics_text
    from executions.models import Task

    call_command("migrate", verbosity=0)
    fill(args.tasks)
    began = time.perf_counter()
    call_command("metrics_rebuild", verbosity=0, stdout=open(os.devnull, "w"))  # noqa: SIM115
    rebuild_ms = (time.perf_counter() - began) * 1000
    metrics_text()
    print(
        f"tasks: {Task.objects.count():,}  metrics_rebuild (one full recount): {rebuild_ms:.1f} ms"
    )
    best, median = timed(old_scrape, args.repeat)
    print(f"before (GROUP BY over the tables): best {best:.2f} ms, median {median:.2f} ms")
    best, median = timed(metrics_text, args.repeat)
    print(f"after, nothing new:                best {best:.2f} ms, median {median:.2f} ms")

    def after_work() -> None:
        one_execution()
        began = time.perf_counter()
        metrics_text()
        samples.append((time.perf_counter() - began) * 1000)

    samples: list[float] = []
    for _ in range(args.repeat):
        after_work()
    print(
        f"after, one execution since:       best {min(samples):.2f} ms, "
        f"median {statistics.median(samples):.2f} ms"
    )


if __name__ == "__main__":
    main()
