"""workflows.testing.run: the real engine in the test's process and transaction, on a
virtual clock, on every node kind; each run's log passes replay_execution --verify."""

from __future__ import annotations

import io
import json
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import TestCase

from executions.models import Execution
from executions.services import sweep as sweeper
from nodes.errors import NodeError
from nodes.registry import function_exists, standing_in
from tests.api.test_workflows__sync import apps_on_disk
from tests.ledger.models import Entry
from tests.servers import Request, http_server
from workflows import clock
from workflows.models import WorkflowDefinition
from workflows.services import workflow_create
from workflows.testing import NoSuchWorkflow, Result, run

pytestmark = pytest.mark.django_db

DAY = 86400


def at(event: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(event["timestamp"])


def started(result: Result, node_id: str) -> list[datetime]:
    """When each attempt of the node started, by the log."""
    return [at(e) for e in result.node(node_id).events if e["type"] == "task_started"]


def verified(result: Result) -> Result:
    """replay_execution --verify on the run's execution and every child it started."""
    ids = [
        result.id,
        *Execution.objects.filter(parent_execution_id=result.id).values_list("pk", flat=True),
    ]
    for execution_id in ids:
        out = io.StringIO()
        call_command("replay_execution", str(execution_id), "--verify", stdout=out)
    return result


def one(node_id: str, function: str, **extra: Any) -> dict[str, Any]:
    return {"id": node_id, "type": "function", "function": function, **extra}


def test_a_day_long_delay_passes_at_once_and_the_log_says_a_day_went_by() -> None:
    definition = {
        "nodes": [
            one("hello", "greet", input={"who": "{{ input.who }}"}),
            {"id": "wait", "type": "delay", "seconds": DAY, "depends_on": ["hello"]},
            one("after", "greet", input={"who": "later"}, depends_on=["wait"]),
        ],
        "output": "{{ nodes.after.output }}",
    }
    began = time.monotonic()
    result = run(definition, {"who": "ada"}, functions={"greet": lambda i, ctx: {"hi": i["who"]}})
    assert time.monotonic() - began < 30  # a day, in the time of a few queries
    assert result.status == "succeeded", result.error
    assert result.output == {"hi": "later"}
    assert result.node("hello").output == {"hi": "ada"}
    assert started(result, "after")[0] - started(result, "hello")[0] >= timedelta(seconds=DAY)
    fired = [e for e in result.node("wait").events if e["type"] == "timer_fired"]
    assert len(fired) == 1
    assert at(fired[0]) >= at(result.events[0]) + timedelta(seconds=DAY)
    verified(result)


def test_retries_wait_their_backoff_on_the_clock() -> None:
    calls: list[int] = []

    def flaky(input: Any, ctx: Any) -> Any:
        calls.append(ctx.attempt)
        ctx.heartbeat()  # renews its lease, inline, with no keeper thread
        if ctx.attempt < 3:
            raise RuntimeError(f"attempt {ctx.attempt} fails")
        return {"ok": ctx.attempt}

    policy = {
        "max_attempts": 3,
        "initial_interval_seconds": 600,
        "backoff_coefficient": 2,
        "max_interval_seconds": 3600,
        "jitter": False,
    }
    result = run(
        {"nodes": [one("charge", "flaky", retry_policy=policy)]}, functions={"flaky": flaky}
    )
    assert result.status == "succeeded", result.error
    node = result.node("charge")
    assert (node.status, node.output, node.attempts) == ("succeeded", {"ok": 3}, 3)
    assert calls == [1, 2, 3]
    first, second, third = started(result, "charge")
    assert second - first >= timedelta(seconds=600)
    assert third - second >= timedelta(seconds=1200)
    verified(result)


def test_a_function_that_fails_for_good_fails_the_execution() -> None:
    def refuse(input: Any, ctx: Any) -> Any:
        raise NodeError("no such card", type="BadCard", retryable=False)

    result = run({"nodes": [one("charge", "refuse")]}, functions={"refuse": refuse})
    assert result.status == "failed"
    assert result.node("charge").error["type"] == "BadCard"
    assert result.node("charge").attempts == 1
    verified(result)


@pytest.fixture
def local_hosts(settings: Any) -> None:
    settings.WORKFLOW_HTTP_ALLOWED_HOSTS = ["127.0.0.1"]


@pytest.mark.usefixtures("local_hosts")
def test_an_http_node_calls_a_local_server_and_retries_a_503() -> None:
    def respond(request: Request, seen: list[Request]) -> tuple[int, Any]:
        return (503, {"busy": True}) if len(seen) == 1 else (200, {"id": 42})

    with http_server(respond) as server:
        definition = {
            "nodes": [
                {
                    "id": "post",
                    "type": "http",
                    "request": {"method": "POST", "url": f"{server.url}/holds"},
                    "retry_policy": {
                        "max_attempts": 2,
                        "initial_interval_seconds": 300,
                        "jitter": False,
                    },
                }
            ],
            "output": "{{ nodes.post.output.body }}",
        }
        result = run(definition)
    assert result.status == "succeeded", result.error
    assert result.output == {"id": 42}
    assert server.hits("/holds") == 2
    first, second = started(result, "post")
    assert second - first >= timedelta(seconds=300)
    verified(result)


APPROVAL = {
    "nodes": [
        {"id": "review", "type": "approval"},
        one("ship", "ship", depends_on=["review"]),
    ]
}


def test_an_approval_stops_the_run_and_approve_goes_on_to_the_end() -> None:
    shipped: list[Any] = []

    def ship(input: Any, ctx: Any) -> Any:
        shipped.append(1)
        return {"shipped": True}

    result = run(APPROVAL, functions={"ship": ship})
    assert result.status == "running"
    assert result.node("review").status == "waiting"
    assert shipped == []
    same = result.approve("review", {"note": "fine"})
    assert same is result
    assert result.status == "succeeded", result.error
    assert result.node("ship").output == {"shipped": True}
    assert shipped == [1]
    verified(result)


def test_reject_fails_the_approval() -> None:
    result = run(APPROVAL, functions={"ship": lambda i, ctx: {}}).reject("review")
    assert result.status == "failed"
    assert result.node("ship").status != "succeeded"
    verified(result)


def test_an_approval_timeout_passes_when_the_test_lets_time_run() -> None:
    definition = {
        "nodes": [
            {"id": "sign_off", "type": "approval", "timeout_seconds": DAY, "on_timeout": "approve"}
        ]
    }
    result = run(definition)
    assert result.status == "running"
    result = result.advance(DAY + 1)
    assert result.status == "succeeded", result.error
    assert any(e["type"] == "approval_timed_out" for e in result.events)
    assert at(result.events[-1]) - at(result.events[0]) >= timedelta(seconds=DAY)
    verified(result)


def test_signals_are_answered_through_the_result_one_wait_after_the_other() -> None:
    definition = {
        "nodes": [
            {"id": "paid", "type": "signal", "signal": "payment"},
            {"id": "shipped", "type": "signal", "signal": "shipment", "depends_on": ["paid"]},
        ],
        "output": {"paid": "{{ nodes.paid.output }}", "shipped": "{{ nodes.shipped.output }}"},
    }
    result = run(definition)
    assert result.status == "running"
    result = result.signal("payment", {"amount": 12})
    assert result.status == "running"
    assert result.node("paid").output == {"amount": 12}
    result = result.signal("shipment")
    assert result.status == "succeeded", result.error
    assert result.output == {"paid": {"amount": 12}, "shipped": None}
    verified(result)


def test_a_map_runs_each_item() -> None:
    definition = {
        "nodes": [
            {
                "id": "each",
                "type": "map",
                "items": "input.orders",
                "max_parallel": 2,
                "node": {"type": "function", "function": "double", "input": "{{ item }}"},
            }
        ],
        "output": "{{ nodes.each.output }}",
    }
    result = run(
        definition, {"orders": [1, 2, 3, 4, 5]}, functions={"double": lambda i, ctx: i * 2}
    )
    assert result.status == "succeeded", result.error
    assert result.output == [2, 4, 6, 8, 10]
    assert result.node("each[4]").output == 10
    verified(result)


def test_more_timers_due_at_once_than_one_sweep_fires_all_fire(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A map's items start their delays in one unit, all due at the same time; the
    # sweeper fires BATCH of them a tick (a map of 501 items and more, at its default).
    monkeypatch.setattr(sweeper, "BATCH", 3)
    definition = {
        "nodes": [
            {
                "id": "each",
                "type": "map",
                "items": "input.orders",
                "node": {"type": "delay", "seconds": 60},
            }
        ]
    }
    result = run(definition, {"orders": list(range(7))})
    assert result.status == "succeeded", result.error
    fired = [e for e in result.events if e["type"] == "timer_fired"]
    assert len(fired) == 7
    verified(result)


def test_a_sub_workflow_runs_as_a_child_with_its_own_delay() -> None:
    inner = {"inner": lambda i, ctx: {"n": i["n"] + 1}}
    with standing_in(inner):  # the function a stored definition names must exist
        workflow_create(
            name="harness-child",
            definition={
                "nodes": [
                    {"id": "nap", "type": "delay", "seconds": 3600},
                    one("inner", "inner", input="{{ input }}", depends_on=["nap"]),
                ],
                "output": "{{ nodes.inner.output }}",
            },
        )
    definition = {
        "nodes": [
            {"id": "sub", "type": "workflow", "workflow": "harness-child", "input": {"n": 2}}
        ],
        "output": "{{ nodes.sub.output }}",
    }
    result = run(definition, functions=inner)
    assert result.status == "succeeded", result.error
    assert result.output == {"n": 3}
    child = Execution.objects.get(parent_execution_id=result.id)
    assert child.status == "succeeded"
    assert child.ended_at is not None
    assert child.started_at is not None
    assert child.ended_at - child.started_at >= timedelta(seconds=3600)
    verified(result)


def test_a_wait_inside_a_sub_workflow_is_answered_through_the_result() -> None:
    workflow_create(
        name="harness-gate",
        definition={"nodes": [{"id": "review", "type": "approval"}], "output": "{{ input }}"},
    )
    definition = {
        "nodes": [{"id": "sub", "type": "workflow", "workflow": "harness-gate", "input": 3}],
        "output": "{{ nodes.sub.output }}",
    }
    result = run(definition)
    assert result.status == "running"
    assert result.approve("review").status == "succeeded", result.error
    assert result.output == 3
    verified(result)


def test_a_failure_runs_the_compensations_of_what_succeeded() -> None:
    undone: list[Any] = []

    def fail(input: Any, ctx: Any) -> Any:
        raise NodeError("card declined", type="Declined", retryable=False)

    definition = {
        "nodes": [
            one("reserve", "reserve", compensation={"type": "function", "function": "release"}),
            one("pay", "pay", depends_on=["reserve"]),
        ]
    }
    functions = {
        "reserve": lambda i, ctx: {"hold": 7},
        "release": lambda i, ctx: undone.append(ctx.node_id),
        "pay": fail,
    }
    result = run(definition, functions=functions)
    assert result.status == "failed"
    assert result.node("pay").error["type"] == "Declined"
    assert undone == ["reserve.compensation"]
    assert result.node("reserve.compensation").status == "succeeded"
    scheduled = [e["node_id"] for e in result.events if e["type"] == "compensation_scheduled"]
    assert scheduled == ["reserve"]
    verified(result)


def test_stand_ins_are_registered_for_the_run_only() -> None:
    assert not function_exists("harness.only")
    result = run({"nodes": [one("a", "harness.only")]}, functions={"harness.only": lambda i, c: 1})
    assert result.status == "succeeded"
    assert not function_exists("harness.only")


def test_the_clock_is_the_real_one_again_after_a_run() -> None:
    run({"nodes": [{"id": "wait", "type": "delay", "seconds": DAY}]})
    assert clock.offset() == timedelta(0)


def test_a_name_is_the_database_s_workflow_and_an_unknown_one_is_refused() -> None:
    named = {"named": lambda i, c: 5}
    with standing_in(named):
        workflow_create(name="harness-named", definition={"nodes": [one("a", "named")]})
    assert run("harness-named", functions=named).node("a").output == 5
    with pytest.raises(NoSuchWorkflow, match="harness-nowhere"):
        run("harness-nowhere")


def test_a_name_with_no_workflow_is_the_installed_app_s_file_with_the_files_it_calls(
    tmp_path: Path,
) -> None:
    with apps_on_disk(tmp_path, 1) as (folder,):
        parent = {
            "nodes": [{"id": "sub", "type": "workflow", "workflow": "harness-leaf"}],
            "output": "{{ nodes.sub.output }}",
        }
        (folder / "harness-root.json").write_text(json.dumps(parent))
        leaf = {"nodes": [{"id": "nap", "type": "delay", "seconds": DAY}], "output": 7}
        (folder / "harness-leaf.json").write_text(json.dumps(leaf))
        result = run("harness-root")
    assert result.status == "succeeded", result.error
    assert result.output == 7
    stored = WorkflowDefinition.objects.filter(name__in=["harness-root", "harness-leaf"])
    assert {workflow.created_by for workflow in stored} == {"workflows.testing"}
    verified(result)


def test_the_same_definition_twice_is_one_workflow() -> None:
    definition = {"nodes": [{"id": "wait", "type": "delay", "seconds": 1}]}
    first, second = run(definition), run(definition)
    assert first.execution.data["workflow"] == second.execution.data["workflow"]
    assert first.id != second.id


@pytest.mark.django_db(transaction=True)
def test_in_autocommit_every_step_commits_for_real() -> None:
    result = run(APPROVAL, functions={"ship": lambda i, ctx: {"ok": 1}})
    assert result.status == "running"
    assert result.approve("review").status == "succeeded"
    verified(result)


class HarnessInTestCase(TestCase):
    """Django's TestCase: the test's transaction never commits, and the harness runs the
    on_commit callbacks itself."""

    def test_a_delay_and_an_approval(self) -> None:
        definition = {
            "nodes": [
                {"id": "wait", "type": "delay", "seconds": DAY},
                {"id": "review", "type": "approval", "depends_on": ["wait"]},
            ]
        }
        result = run(definition)
        assert result.status == "running"
        assert result.approve("review").status == "succeeded"
        verified(result)


def test_a_transactional_function_runs_in_its_own_savepoint_of_the_tests_transaction() -> None:
    """In the test's transaction: the step that fails has its row rolled back with it, the
    one that succeeds keeps it, and both results say they were transactional."""
    definition = {
        "nodes": [
            one("kept", "ledger.insert", input={"seconds": 0}),
            one("undone", "ledger.insert", input={"seconds": 0, "fail": True}),
        ],
        "retry_policy": {"max_attempts": 2, "initial_interval_seconds": 1},
    }
    result = verified(run(definition))
    assert result.status == "failed"
    rows = Entry.objects.filter(execution_id=str(result.id))
    assert sorted(rows.values_list("node_id", "attempt")) == [("kept", 1)]
    results = [
        (e["node_id"], e["type"], e["data"]["transactional"])
        for e in result.events
        if e["type"] in ("task_completed", "task_failed")
    ]
    assert sorted(results) == [
        ("kept", "task_completed", True),
        ("undone", "task_failed", True),
        ("undone", "task_failed", True),
    ]


def timeouts() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('statement_timeout'), "
            "current_setting('idle_in_transaction_session_timeout')"
        )
        return list(cursor.fetchone())


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's settings")
def test_a_transactional_function_is_bounded_and_leaves_no_bound_behind(settings) -> None:
    settings.WORKFLOW_TRANSACTIONAL_TIMEOUT_SECONDS = 2.5
    before = timeouts()
    probe = {"ledger.insert": lambda input, ctx: timeouts()}  # stands in, transactional still
    result = run({"nodes": [one("probe", "ledger.insert")]}, functions=probe)
    assert result.node("probe").output == ["2500ms", "2500ms"]
    assert timeouts() == before
