"""Containment on real workers: whatever breaks inside one execution ends that
execution failed with an error naming what broke, and the executions started after it
still time out, retry and finish on time (the `canary`).

Offenders: a version row corrupted by raw SQL under an execution (its claim, its timer), a
workflow that calls itself (the depth backstop), and a sub-workflow node that times out on
its child. (The issue's overflowing `when` is caught earlier, by the template layer:
test_containment_bounds.py.)
"""

from __future__ import annotations

import time
from datetime import timedelta
from uuid import UUID

from django.db import transaction
from django.utils import timezone

from executions.engine.statuses import EXECUTION_TERMINAL
from executions.models import Event, Execution, Task
from executions.services.start import execution_start
from tests.factories import events, make_version, start
from tests.integration.corruption import GARBAGE, set_definition
from tests.waiting import eventually, scaled

#: timed out twice (1 s each) with one retry between, while `quick` succeeds and `after`
#: (all_done) runs: the execution ends failed, as strict failure says, in a few seconds.
CANARY = {
    "nodes": [
        {
            "id": "slow",
            "type": "function",
            "function": "std.sleep",
            "input": {"seconds": 30},
            "timeout_seconds": 1,
            "retry_policy": {"max_attempts": 2, "initial_interval_seconds": 0.2, "jitter": False},
        },
        {"id": "quick", "type": "function", "function": "std.sleep", "input": {"seconds": 0.2}},
        {
            "id": "after",
            "type": "function",
            "function": "std.echo",
            "depends_on": ["slow", "quick"],
            "trigger_rule": "all_done",
            "input": "{{ nodes.quick.output }}",
        },
    ]
}
#: With timeouts working the canary's log spans about 5 s; broken, `slow` alone would take
#: 60. A bound in time is what the canary is about: a slow machine gets its factor.
CANARY_SECONDS = 15.0

TWO_STEPS = {
    "nodes": [
        {"id": "a", "type": "function", "function": "std.sleep", "input": {"seconds": 0.5}},
        {"id": "b", "type": "function", "function": "std.echo", "depends_on": ["a"]},
    ]
}


def assert_canary_works(live) -> None:
    canary = start(CANARY)
    done = live.wait(canary.pk, timeout=40)
    # From its own log: workflow_started to workflow_failed, whatever the test's polling.
    first, *_, last = events(done)
    took = (last.timestamp - first.timestamp).total_seconds()
    assert took < scaled(CANARY_SECONDS), f"the canary ran for {took:.1f}s"
    print(f"canary ended in {took:.1f}s")
    assert done.status == "failed", done.error
    assert done.error["nodes"] == ["slow"], done.error
    timeouts = events(done, "task_timed_out", "slow")
    assert [e.attempt for e in timeouts] == [1, 2]
    assert all("timeout_seconds passed" in e.data["error"]["message"] for e in timeouts)
    assert len(events(done, "task_retry_scheduled", "slow")) == 1
    statuses = dict(Task.objects.filter(execution=done).values_list("node_id", "status"))
    assert statuses == {"slow": "failed", "quick": "succeeded", "after": "succeeded"}


def ended_on_garbage(live, execution_id: UUID | str, definition: dict) -> Execution:
    """Wait for the execution to end while its version is garbage, then put the definition
    back and let live.wait check the log (the replay check reads the definition)."""
    try:
        eventually(
            lambda: (
                Execution.objects.values_list("status", flat=True).get(pk=execution_id)
                in EXECUTION_TERMINAL
            ),
            30,
            f"execution {execution_id} never ended on its garbage definition",
        )
    finally:
        set_definition(Execution.objects.get(pk=execution_id).version_id, definition)
    return live.wait(execution_id, timeout=1)


def assert_engine_error(execution: Execution, where: str) -> None:
    assert execution.status == "failed", execution.error
    error = execution.error
    assert error["type"] == "EngineError", error
    assert error["where"] == where, error
    assert error["message"].startswith("DefinitionError: nodes: must be a non-empty list"), error
    assert Event.objects.filter(execution=execution, type="engine_error").count() == 1


def test_a_definition_corrupted_under_an_execution_fails_it_at_the_claim(live) -> None:
    version = make_version(TWO_STEPS)
    # Corrupted in the start's own transaction: no worker ever saw the good definition.
    with transaction.atomic():
        execution, _ = execution_start(version=version, input={})
        set_definition(version.pk, GARBAGE)
    done = ended_on_garbage(live, execution.pk, TWO_STEPS)
    # At once, by the worker's boundary at its claim of the first message: not after a
    # lease (the sweeper's timeout) or a republish (a second message for the attempt).
    assert_engine_error(done, "worker")
    assert live.taken(done, "a") == 1
    assert events(done, "task_timed_out") == []
    cancelled = events(done, "task_cancelled", "a")
    assert len(cancelled) == 1
    assert cancelled[0].data == {"reason": "engine error"}
    assert_canary_works(live)


def test_a_definition_corrupted_before_a_scheduled_start_fails_it_at_the_timer(live) -> None:
    version = make_version(TWO_STEPS)
    with transaction.atomic():
        execution, _ = execution_start(
            version=version, input={}, start_at=timezone.now() + timedelta(seconds=1)
        )
        set_definition(version.pk, GARBAGE)
    done = ended_on_garbage(live, execution.pk, TWO_STEPS)
    assert_engine_error(done, "timer")
    assert [e.type for e in events(done)] == ["engine_error", "workflow_failed"]
    assert_canary_works(live)


def test_a_workflow_calling_itself_stops_at_the_depth_limit(live) -> None:
    # make_version skips the cycle check (a cycle that slipped in, e.g. by a race).
    name = f"again-{time.monotonic_ns()}"
    make_version(
        {"nodes": [{"id": "again", "type": "workflow", "workflow": name, "input": "{{ input }}"}]},
        name=name,
    )
    top = start({"nodes": [{"id": "enter", "type": "workflow", "workflow": name}]})
    began = time.monotonic()
    done = live.wait(top.pk, timeout=90)
    took = time.monotonic() - began
    assert done.status == "failed"
    chain = [done]
    while True:
        child = Execution.objects.filter(parent_execution=chain[-1]).first()
        if child is None:
            break
        chain.append(live.wait(child.pk, timeout=30))
    # top is depth 0, WORKFLOW_MAX_DEPTH (16) children below it, and no deeper.
    assert [e.depth for e in chain] == list(range(17))
    assert all(e.status == "failed" for e in chain)
    deepest = chain[-1].error["cause"]
    assert deepest["type"] == "MaxDepthExceeded"
    assert "WORKFLOW_MAX_DEPTH=16" in deepest["message"]
    print(f"depth backstop: 17 nested executions failed in {took:.1f}s")
    assert_canary_works(live)


def test_a_sub_workflow_node_that_times_out_cancels_its_child(live) -> None:
    name = make_version({"nodes": [{"id": "wait", "type": "delay", "seconds": 600}]}).workflow.name
    parent = start(
        {
            "nodes": [
                {
                    "id": "sub",
                    "type": "workflow",
                    "workflow": name,
                    "timeout_seconds": 1,
                    "retry_policy": {"max_attempts": 1},
                }
            ]
        }
    )
    done = live.wait(parent.pk, timeout=30)
    assert done.status == "failed"
    assert done.error["cause"]["type"] == "Timeout"
    child = Execution.objects.get(parent_execution=done)
    assert (child.parent_node_id, child.parent_attempt) == ("sub", 1)
    child = live.wait(child.pk, timeout=20)
    assert child.status == "cancelled"
