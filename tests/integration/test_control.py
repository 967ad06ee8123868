"""Execution control on real workers: cancel, retry, replay, point-in-time state."""

from __future__ import annotations

from typing import Any

import pytest

from executions.models import Attempt, AttemptStatus, Task
from executions.services.control import (
    NotAllowed,
    execution_cancel,
    execution_replay,
    execution_retry,
)
from tests.factories import events, start, timeline
from tests.servers import http_server
from tests.waiting import eventually


def wait_for_status(execution, node_id: str, status: str, timeout: float = 30) -> None:
    eventually(
        lambda: Task.objects.get(execution=execution, node_id=node_id).status == status,
        timeout,
        lambda: f"{node_id} never became {status}: {timeline(execution)}",
    )


def test_cancel_stops_a_running_sleep_and_its_dependents_never_start(live) -> None:
    execution = start(
        {
            "nodes": [
                {
                    "id": "nap",
                    "type": "function",
                    "function": "std.sleep",
                    "input": {"seconds": 60},
                },
                {"id": "after", "type": "function", "function": "std.noop", "depends_on": ["nap"]},
                {"id": "other", "type": "delay", "seconds": 600},
            ]
        }
    )
    wait_for_status(execution, "nap", "running")
    execution_cancel(execution_id=execution.pk)
    done = live.wait(execution.pk, timeout=10)
    assert done.status == "cancelled"
    recorded = timeline(done)
    statuses = dict(Task.objects.filter(execution=done).values_list("node_id", "status"))
    assert statuses == {"nap": "cancelled", "after": "cancelled", "other": "cancelled"}
    assert events(done, "task_scheduled", "after") == []
    assert events(done, "task_completed") == []
    assert Attempt.objects.get(execution=done, node_id="nap").status == AttemptStatus.CANCELLED
    # The worker really stopped sleeping: its task for the nap returned, the runtime
    # saying the sleep was cut short (a sleep run out would have said it succeeded).
    live.message_over(done, "nap")
    said = [r["message"] for r in live.records(done.pk) if r.get("node_id") == "nap"]
    assert "attempt stopped: cancelled or timed out" in said, said
    assert not [m for m in said if m.startswith("attempt succeeded")], said
    quick = start({"nodes": [{"id": "ping", "type": "function", "function": "std.noop"}]})
    assert live.wait(quick.pk, timeout=15).status == "succeeded"
    # Nor did the stopped node record anything late: its task is over, the log unchanged.
    assert timeline(done) == recorded
    assert events(done, "task_completed") == []
    with pytest.raises(NotAllowed):
        execution_cancel(execution_id=done.pk)


class Switchable:
    """500 until `fixed` is set, then 200; /always-ok always answers 200."""

    def __init__(self) -> None:
        self.fixed = False

    def __call__(self, request, seen) -> tuple[int, dict[str, Any]]:
        ok = self.fixed or request.path.startswith("/always-ok")
        return (200, {"value": 7}) if ok else (500, {"error": "down"})


@pytest.fixture
def switch():
    return Switchable()


@pytest.fixture
def server(switch):
    with http_server(switch) as running:
        yield running


def test_retry_after_the_server_is_fixed_continues_the_same_execution(live, server, switch) -> None:
    execution = start(
        {
            "nodes": [
                {
                    "id": "fetch",
                    "type": "http",
                    "request": {"method": "GET", "url": f"{server.url}/data"},
                },
                {
                    "id": "use",
                    "type": "function",
                    "function": "std.echo",
                    "depends_on": ["fetch"],
                    "input": "{{ nodes.fetch.output.body.value }}",
                },
            ],
            "retry_policy": {"max_attempts": 2, "initial_interval_seconds": 0.2},
        }
    )
    failed = live.wait(execution.pk)
    assert failed.status == "failed"
    assert Task.objects.get(execution=failed, node_id="fetch").attempts == 2
    assert Task.objects.get(execution=failed, node_id="use").status == "skipped"
    with pytest.raises(NotAllowed):
        execution_retry(
            execution_id=start({"nodes": [{"id": "n", "type": "delay", "seconds": 600}]}).pk
        )
    switch.fixed = True
    execution_retry(execution_id=failed.pk)
    done = live.wait(failed.pk)
    assert done.pk == execution.pk, timeline(done)
    assert done.status == "succeeded", timeline(done)
    assert done.output == {"use": 7}
    fetch = Task.objects.get(execution=done, node_id="fetch")
    assert fetch.attempts == 3
    assert fetch.status == "succeeded"
    assert [e.attempt for e in events(done, "task_started", "fetch")] == [1, 2, 3]
    (request,) = events(done, "retry_requested")
    assert request.data["nodes"] == ["fetch", "use"]
    assert server.hits("/data") == 3


def test_replay_from_a_middle_node_reuses_upstream_outputs(live, server) -> None:
    original = start(
        {
            "nodes": [
                {
                    "id": "fetch",
                    "type": "http",
                    "request": {"method": "GET", "url": f"{server.url}/always-ok"},
                },
                {
                    "id": "transform",
                    "type": "function",
                    "function": "std.echo",
                    "depends_on": ["fetch"],
                    "input": {"v": "{{ nodes.fetch.output.body.value }}"},
                },
                {
                    "id": "publish",
                    "type": "function",
                    "function": "std.echo",
                    "depends_on": ["transform"],
                    "input": "{{ nodes.transform.output }}",
                },
            ]
        },
        {"run": 1},
    )
    assert live.wait(original.pk).status == "succeeded"
    assert server.hits("/always-ok") == 1
    replay = execution_replay(execution_id=original.pk, from_node="transform")
    done = live.wait(replay.pk)
    assert done.status == "succeeded"
    assert done.replay_of_id == original.pk
    assert done.version_id == original.version_id
    assert done.input == {"run": 1}
    assert server.hits("/always-ok") == 1  # upstream server not called again
    (reused,) = events(done, "task_completed", "fetch")
    assert reused.data["reused_from"] == str(original.pk)
    assert events(done, "task_scheduled", "fetch") == []
    assert [e.attempt for e in events(done, "task_started", "transform")] == [1]
    assert done.output == {"publish": {"v": 7}}
    full = execution_replay(execution_id=original.pk)
    assert live.wait(full.pk).status == "succeeded"
    assert server.hits("/always-ok") == 2
