"""workflows.api against the session's real worker and beat: a start inside the caller's
transaction runs if and only if the block commits, and result() waits for the end."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction

from executions.models import Attempt, Event, Execution
from tests.factories import make_version
from tests.integration.engine import Engine
from tests.integration.test_celery_events import by_name
from tests.waiting import eventually as wait_for
from workflows import api

ECHO = {"nodes": [{"id": "a", "type": "function", "function": "std.echo", "input": "{{ input }}"}]}
FAIL = {
    "nodes": [
        {
            "id": "a",
            "type": "function",
            "function": "std.fail",
            "input": {"message": "no stock", "retryable": False},
        }
    ]
}


def test_a_committed_start_runs_to_the_end_and_result_returns_its_output(live: Engine) -> None:
    name = make_version(ECHO).workflow.name
    with transaction.atomic():
        run = api.start(name, {"order": 42}, by="shop")
    assert run.result(timeout=60) == {"a": {"order": 42}}
    assert run.status == "succeeded"
    live.wait(run.id)  # the log replays and its hashes chain


def test_result_raises_execution_failed_for_a_failed_execution(live: Engine) -> None:
    run = api.start(make_version(FAIL).workflow.name)
    with pytest.raises(api.ExecutionFailed, match="no stock") as failed:
        run.result(timeout=60)
    assert failed.value.execution.status == "failed"
    assert failed.value.execution.error["cause"]["message"] == "no stock"


def test_wait_gives_up_with_timeout_error(live: Engine) -> None:
    run = api.start(make_version({"nodes": [{"id": "ok", "type": "approval"}]}).workflow.name)
    with pytest.raises(TimeoutError, match="still running"):
        run.wait(timeout=0.5)
    run.cancel(by="test")
    assert run.wait(timeout=60).status == "cancelled"


def test_a_rolled_back_start_leaves_nothing_and_no_worker_ever_sees_it(
    live: Engine, task_events: list[dict[str, Any]]
) -> None:
    rolled_back = make_version(ECHO).workflow.name
    ids: list[Any] = []

    def block() -> None:
        with transaction.atomic():
            ids.append(api.start(rolled_back, {"n": 1}).id)
            raise RuntimeError("the caller's block fails after the start")

    with pytest.raises(RuntimeError):
        block()
    assert not Execution.objects.filter(pk=ids[0]).exists()
    assert not Event.objects.filter(execution_id=ids[0]).exists()
    assert not Attempt.objects.filter(execution_id=ids[0]).exists()

    # A committed start after it: once its attempt's events are seen, a message of the
    # rolled-back one, had any been sent, would have been seen before it.
    committed = make_version(ECHO).workflow.name
    run = api.start(committed, {"n": 2})
    assert run.result(timeout=60) == {"a": {"n": 2}}
    wait_for(
        lambda: f"wf:{committed}/a#1" in by_name(list(task_events))["task-succeeded"],
        30,
        "the committed start's task events",
    )
    names = set().union(*by_name(list(task_events)).values())
    assert not [n for n in names if n.startswith(f"wf:{rolled_back}/")], names
