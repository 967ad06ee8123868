"""manage.py purge_executions: exactly the ended trees go, with every row of theirs, each
leaving a tombstone; what still runs keeps working; a purge that breaks resumes whole."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any
from uuid import UUID

import pytest
from django.apps import apps
from django.core.management import call_command
from django.utils import timezone

from executions.metrics import seed
from executions.metrics.models import MetricDelta
from executions.models import Attempt, Execution, Task, Tombstone
from executions.schedules.services import schedule_create, schedule_run
from executions.services import purge as service
from executions.services import purge_batch
from executions.services.control import (
    execution_cancel,
    execution_replay,
    execution_retry,
    signal_send,
)
from executions.services.sweep import sweep
from executions.triggers.services import event_publish, trigger_create
from executions.worker.runtime import run_task
from tests.factories import make_version, start
from tests.purge_world import owned_rows, table_counts

pytestmark = pytest.mark.django_db(transaction=True)

ECHO = {"nodes": [{"id": "a", "type": "function", "function": "std.echo", "input": "{{ input }}"}]}
WAIT = {"nodes": [{"id": "review", "type": "approval", "timeout_seconds": 3600}]}
KEYED = {
    "nodes": [{"id": "a", "type": "function", "function": "std.echo"}],
    "concurrency": {"key": "{{ input.customer }}", "limit": 1},
}


def run_all(execution: Execution) -> Execution:
    """Run its scheduled attempts in this process, as a worker would, until none is left."""
    while True:
        waiting = Attempt.objects.filter(execution=execution, status="scheduled").first()
        if waiting is None:
            break
        run_task(waiting.pk)
    execution.refresh_from_db()
    return execution


def world() -> tuple[dict[str, Execution], dict[str, Execution]]:
    """(ended trees' members, executions that must stay), by what they are."""
    ended: dict[str, Execution] = {}
    kept: dict[str, Execution] = {}
    ended["echo"] = run_all(start(ECHO, {"x": 1}))
    failed = start(WAIT)
    signal_send(execution_id=failed.pk, node_id="review", decision="reject")
    ended["rejected"] = Execution.objects.get(pk=failed.pk)
    keyed = start(KEYED, {"customer": "c-1"})
    ended["keyed"] = execution_cancel(execution_id=keyed.pk)
    # A retried execution, its retry accepted under an Idempotency-Key, then approved.
    retried = start(WAIT)
    signal_send(execution_id=retried.pk, node_id="review", decision="reject")
    execution_retry(execution_id=retried.pk, idempotency_key="retry-1")
    signal_send(execution_id=retried.pk, node_id="review", decision="approve")
    ended["retried"] = Execution.objects.get(pk=retried.pk)

    make_version(ECHO, name="leaf")
    parent = start({"nodes": [{"id": "sub", "type": "workflow", "workflow": "leaf"}]})
    run_task(Attempt.objects.get(execution=parent, node_id="sub").pk)
    child = run_all(Execution.objects.get(parent_execution=parent))
    sweep()  # the child's notice: the parent records its output
    ended["parent"], ended["child"] = Execution.objects.get(pk=parent.pk), child

    # A parent still waiting after its child ended: neither may go.
    waiting_parent = start(
        {
            "nodes": [
                {"id": "sub", "type": "workflow", "workflow": "leaf"},
                {"id": "review", "type": "approval", "depends_on": ["sub"]},
            ]
        }
    )
    run_task(Attempt.objects.get(execution=waiting_parent, node_id="sub").pk)
    kept["child_of_running"] = run_all(Execution.objects.get(parent_execution=waiting_parent))
    sweep()
    kept["running_parent"] = waiting_parent

    scheduled_version = make_version(ECHO, name="nightly")
    schedule = schedule_create(workflow=scheduled_version.workflow, cron="* * * * *")
    fired = schedule_run(schedule_id=str(schedule.pk))
    assert fired is not None
    ended["scheduled"] = run_all(fired)

    triggered_version = make_version(ECHO, name="on-order")
    trigger_create(name="orders", event="order.placed", workflow=triggered_version.workflow)
    published = event_publish(key="order.placed", data={"order": 7})
    (run,) = published.runs.all()
    assert run.execution_id is not None
    ended["triggered"] = run_all(Execution.objects.get(pk=run.execution_id))

    kept["running"] = start(WAIT)
    kept["replay"] = execution_replay(execution_id=ended["rejected"].pk)
    kept["keyed_running"] = start(KEYED, {"customer": "c-2"})

    for name, execution in ended.items():
        assert execution.status in ("succeeded", "failed", "cancelled"), (name, execution.status)
    for name, execution in kept.items():
        execution.refresh_from_db()
        if name != "child_of_running":
            assert execution.status not in ("succeeded", "failed", "cancelled"), name
    return ended, kept


def purge(*args: str) -> str:
    out = StringIO()
    until = (timezone.now() + timedelta(seconds=1)).isoformat()
    call_command("purge_executions", "--ended-before", until, *args, stdout=out)
    return out.getvalue()


def ids_of(executions: dict[str, Execution]) -> set[UUID]:
    return {execution.pk for execution in executions.values()}


def test_a_purge_removes_exactly_the_ended_trees_with_every_row_of_theirs() -> None:
    ended, kept = world()
    assert MetricDelta.objects.exists()  # not yet scraped: folded before the purge
    before = table_counts()
    owned = owned_rows(ids_of(ended))
    for table in ("executions_event", "executions_task", "executions_attempt",
                  "executions_timer", "executions_retryrequest", "executions_schedulefire",
                  "executions_triggerrun", "executions_publishedevent",
                  "executions_concurrencykey"):  # fmt: skip
        assert owned[table] > 0, f"the world has no {table} row to purge"

    said = purge("--batch-size", "3")

    after = table_counts()
    expected = before - owned
    expected["executions_tombstone"] = len(ended)
    expected["executions_metricdelta"] = 0
    for table in set(before) | set(after):
        if table == "executions_metricseries":  # the totals the folded deltas went into
            continue
        assert after[table] == expected[table], (table, before[table], after[table])
    assert set(Execution.objects.values_list("pk", flat=True)) == ids_of(kept)
    assert set(Tombstone.objects.values_list("pk", flat=True)) == ids_of(ended)
    assert f"purged {len(ended)} executions" in said
    # What still runs keeps working to its end.
    kept["replay"].refresh_from_db()
    assert kept["replay"].replay_of_id is None
    for name in ("running", "replay", "running_parent"):
        signal_send(execution_id=kept[name].pk, node_id="review", decision="approve")
        assert Execution.objects.get(pk=kept[name].pk).status == "succeeded", name
    assert run_all(kept["keyed_running"]).status == "succeeded"


def test_the_tombstones_keep_each_log_s_head() -> None:
    execution = run_all(start(ECHO, {"x": 1}))
    purge()
    tombstone = Tombstone.objects.get(pk=execution.pk)
    assert (tombstone.status, tombstone.events, tombstone.last_hash) == (
        "succeeded",
        execution.last_seq,
        execution.last_hash,
    )
    assert tombstone.ended_at == execution.ended_at
    assert (tombstone.workflow_id, tombstone.version_id) == (
        execution.workflow_id,
        execution.version_id,
    )


def test_a_dry_run_counts_and_deletes_nothing() -> None:
    execution = run_all(start(ECHO, {"x": 1}))
    before = table_counts()
    said = purge("--dry-run")
    assert f"would purge 1 executions (1 trees), {execution.last_seq} events" in said
    assert table_counts() == before


def test_the_selectors_choose_by_workflow_status_and_end_time() -> None:
    done = run_all(start(ECHO, {"x": 1}))
    cancelled = execution_cancel(execution_id=start(ECHO).pk)
    purge("--status", "cancelled")
    assert set(Tombstone.objects.values_list("pk", flat=True)) == {cancelled.pk}
    call_command("purge_executions", "--older-than", "1d", stdout=StringIO())
    assert Execution.objects.filter(pk=done.pk).exists()  # ended a moment ago
    other = run_all(start(ECHO))
    purge("--workflow", other.workflow.name)
    assert not Execution.objects.filter(pk=other.pk).exists()
    assert Execution.objects.filter(pk=done.pk).exists()


def _breaking(real: Any, call: int, *, after: bool) -> Any:
    """`real`, except that its `call`-th call raises: before it runs, or after."""
    calls = {"n": 0}

    def breaking(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == call and not after:
            raise RuntimeError("killed between batches")
        result = real(*args, **kwargs)
        if calls["n"] == call:
            raise RuntimeError("killed inside a batch, its rows deleted")
        return result

    return breaking


@pytest.mark.parametrize("where", ["between", "inside"])
def test_a_purge_broken_half_way_resumes_with_nothing_lost_or_half_deleted(
    where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    executions = [run_all(start(ECHO, {"n": n})) for n in range(5)]
    before = table_counts()
    owned = owned_rows(e.pk for e in executions)
    if where == "between":
        monkeypatch.setattr(service, "purge_batch", _breaking(service.purge_batch, 2, after=False))
    else:
        broken = _breaking(purge_batch._delete_rows, 2, after=True)
        monkeypatch.setattr(purge_batch, "_delete_rows", broken)
    with pytest.raises(RuntimeError, match="killed"):
        purge("--batch-size", "2")
    # The first batch went whole; nothing of the second or later did.
    gone = set(Tombstone.objects.values_list("pk", flat=True))
    assert len(gone) == 2
    for execution in executions:
        if execution.pk in gone:
            assert not Task.objects.filter(execution_id=execution.pk).exists()
        else:
            assert Execution.objects.get(pk=execution.pk).last_seq == execution.last_seq
            assert Task.objects.filter(execution_id=execution.pk).exists()
    monkeypatch.undo()
    said = purge("--batch-size", "2")
    assert "purged 3 executions" in said
    after = table_counts()
    expected = before - owned
    expected["executions_tombstone"] = 5
    expected["executions_metricdelta"] = 0
    for table in set(before) | set(after):
        if table != "executions_metricseries":
            assert after[table] == expected[table], table


def test_a_purge_takes_its_executions_and_tasks_out_of_the_status_gauges() -> None:
    world()
    purge()
    gauges = ("workflow_executions", "workflow_tasks")
    # The recount reads the tables the purge left; the counters keep what they counted.
    assert [line for line in seed.drift(apps.get_model) if line.startswith(gauges)] == []
