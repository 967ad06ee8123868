"""The incremental metrics equal a full recount of the tables, whatever path moved them.

Executions are driven in-process through the services the workers and the API call
(claim, complete, fail, timer, operator retry, cancel, map items, a start_at), then the
totals folded from the staged deltas are compared with executions.metrics.seed's recount, which
reads the executions, tasks, events and attempts tables whole.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection
from django.db.migrations import RunPython
from django.db.migrations.loader import MigrationLoader
from django.utils import timezone

from executions.metrics import ledger, seed
from executions.metrics.metrics import metrics_text
from executions.metrics.models import MetricDelta, MetricSeries
from executions.models import Attempt, AttemptStatus, Timer
from executions.services.attempts import attempt_claim, attempt_complete, attempt_fail
from executions.services.control import execution_cancel, execution_retry
from executions.services.timers import timer_fire
from tests.factories import start

pytestmark = pytest.mark.django_db

FLAKY = {
    "nodes": [
        {"id": "ok", "type": "function", "function": "std.echo"},
        {
            "id": "flaky",
            "type": "function",
            "function": "std.fail",
            "depends_on": ["ok"],
            "retry_policy": {"max_attempts": 2, "initial_interval_seconds": 1, "jitter": False},
        },
    ]
}
MAP = {
    "nodes": [
        {"id": "items", "type": "map", "items": "{{ input.xs }}",
         "node": {"type": "function", "function": "std.echo", "input": "{{ item }}"}},
    ]
}  # fmt: skip
WORKER = "test-worker"


def run_scheduled(*, fail: bool = False) -> int:
    """Claim and finish every scheduled attempt once; returns how many ran."""
    ran = 0
    for pk in Attempt.objects.filter(status=AttemptStatus.SCHEDULED).values_list("pk", flat=True):
        if attempt_claim(attempt_id=pk, worker_id=WORKER) is None:
            continue
        if fail:
            error = {"type": "Boom", "message": "boom", "retryable": True}
            attempt_fail(attempt_id=pk, worker_id=WORKER, error=error)
        else:
            attempt_complete(attempt_id=pk, worker_id=WORKER, output={"ok": True})
        ran += 1
    return ran


def fire_due_timers() -> None:
    Timer.objects.filter(fired_at__isnull=True).update(due_at=timezone.now())
    for pk in Timer.objects.filter(fired_at__isnull=True).values_list("pk", flat=True):
        timer_fire(timer_id=pk)


def folded() -> dict[ledger.Key, float]:
    ledger.catch_up()
    return {
        (name, ledger.labels_key(labels)): value
        for name, found in ledger.series().items()
        for labels, value in found
        if value or name in ("tasks_running",)
    }


def recount() -> dict[ledger.Key, float]:
    return {key: value for key, value in seed.totals(apps.get_model).items() if value}


def comparable(totals: dict[ledger.Key, float]) -> dict[ledger.Key, float]:
    """What the recount can know: not the histograms or finished attempts (no history)."""
    skipped = ("task_duration", "task_queue_wait", "task_attempts_finished")
    return {k: v for k, v in totals.items() if not k[0].startswith(skipped) and v}


def test_incremental_totals_equal_a_full_recount() -> None:
    flaky = start(FLAKY)
    start({"nodes": [{"id": "a", "type": "function", "function": "std.noop"}]}, start_at=(
        timezone.now() + timedelta(hours=1)
    ))  # fmt: skip
    mapped = start(MAP, input={"xs": [1, 2, 3]})
    assert comparable(folded()) == comparable(recount())

    run_scheduled()  # ok, and the map's items
    run_scheduled(fail=True)  # flaky #1
    assert comparable(folded()) == comparable(recount())
    fire_due_timers()
    run_scheduled(fail=True)  # flaky #2: the execution fails
    flaky.refresh_from_db()
    mapped.refresh_from_db()
    assert (flaky.status, mapped.status) == ("failed", "succeeded")
    assert comparable(folded()) == comparable(recount())

    execution_retry(execution_id=flaky.pk)  # failed -> running, flaky scheduled again
    assert comparable(folded()) == comparable(recount())
    claimed = Attempt.objects.get(status=AttemptStatus.SCHEDULED)
    attempt_claim(attempt_id=claimed.pk, worker_id=WORKER)
    execution_cancel(execution_id=flaky.pk)  # the running attempt is cancelled
    totals = folded()
    assert comparable(totals) == comparable(recount())
    assert seed.drift(apps.get_model) == []  # what the chaos run checks

    name = flaky.workflow.name
    fn = {"workflow": name, "node_type": "function"}
    assert totals[("workflows_started", ledger.labels_key({"workflow": name}))] == 1
    assert totals[("workflows_failed", ledger.labels_key({"workflow": name}))] == 1
    assert totals[("workflows_cancelled", ledger.labels_key({"workflow": name}))] == 1
    assert totals[("task_retry", ledger.labels_key(fn))] == 1
    # Absent is 0 too: a claim logged in the same unit as its result (the inbox,
    # executions/kernel/inbox.py) nets to no change, and no series is written for it.
    assert totals.get(("tasks_running", ledger.labels_key(fn)), 0) == 0
    finished = {
        result: totals.get(("task_attempts_finished", ledger.labels_key({**fn, "result": result})))
        for result in ("succeeded", "failed", "cancelled")
    }
    assert finished == {"succeeded": 1, "failed": 2, "cancelled": 1}
    assert totals[("task_duration_seconds_count", ledger.labels_key(fn))] == 4
    items = {"workflow": mapped.workflow.name, "node_type": "function"}
    assert totals[("task_queue_wait_seconds_count", ledger.labels_key(items))] == 3


def test_a_scrape_takes_every_pending_delta_once() -> None:
    start({"nodes": [{"id": "a", "type": "function", "function": "std.noop"}]})
    assert MetricDelta.objects.exists()
    first = _stable(metrics_text())
    assert not MetricDelta.objects.exists()
    assert _stable(metrics_text()) == first
    assert 'workflow_tasks{status="scheduled"} 1.0' in first


def _stable(text: bytes) -> list[str]:
    """The exposition without the one gauge that moves with the clock."""
    return [line for line in text.decode().splitlines() if "oldest_unclaimed" not in line]


def test_drift_names_a_series_that_differs() -> None:
    start(FLAKY)
    assert seed.drift(apps.get_model) == []
    ledger.add({("workflow_tasks", ledger.labels_key({"status": "pending"})): 1})
    (problem,) = seed.drift(apps.get_model)
    assert problem.startswith('workflow_tasks{"status":"pending"}: kept ')


def test_rebuild_replaces_the_totals_with_the_recount(capsys) -> None:
    start(FLAKY)
    run_scheduled()
    before = comparable(folded())
    ledger.add({("workflow_tasks", ledger.labels_key({"status": "succeeded"})): 1000})
    assert comparable(folded()) != before
    call_command("metrics_rebuild")
    assert "series" in capsys.readouterr().out
    assert comparable(folded()) == before


def test_the_migration_creating_the_metrics_tables_counts_the_history_already_there() -> None:
    name = start(FLAKY).workflow.name
    run_scheduled()
    expected = comparable(recount())
    assert expected[("workflows_started", ledger.labels_key({"workflow": name}))] == 1
    # The database as the migration finds it: history, and metrics tables just created.
    MetricDelta.objects.all().delete()
    MetricSeries.objects.all().delete()
    assert comparable(folded()) == {}
    loader = MigrationLoader(connection)
    key = ("executions", "0016_schedules_triggers_metrics")
    (seeding,) = [op for op in loader.graph.nodes[key].operations if isinstance(op, RunPython)]
    assert seeding.reversible
    historical = loader.project_state(key, at_end=True).apps
    # As `migrate` calls it, but the editor is not entered: the seed runs no DDL.
    seeding.code(historical, connection.schema_editor())
    assert comparable(folded()) == expected
