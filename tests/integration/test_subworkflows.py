"""`workflow` nodes: a child execution per attempt, its output as the node's output."""

from __future__ import annotations

import time

from executions.models import Execution, Task
from tests.factories import events, make_version, start


def child_workflow(definition: dict) -> str:
    return make_version(definition).workflow.name


def test_child_output_flows_to_the_parent(live) -> None:
    name = child_workflow(
        {
            "nodes": [
                {
                    "id": "greet",
                    "type": "function",
                    "function": "std.echo",
                    "input": {"hello": "{{ input.who }}"},
                }
            ],
            "output": "{{ nodes.greet.output }}",
        }
    )
    parent = start(
        {
            "nodes": [
                {
                    "id": "sub",
                    "type": "workflow",
                    "workflow": name,
                    "input": {"who": "{{ input.who }}"},
                },
                {
                    "id": "after",
                    "type": "function",
                    "function": "std.echo",
                    "depends_on": ["sub"],
                    "input": "{{ nodes.sub.output.hello }}",
                },
            ]
        },
        {"who": "ada"},
    )
    done = live.wait(parent.pk)
    assert done.status == "succeeded", done.error
    assert done.output == {"after": "ada"}
    (started,) = events(done, "child_workflow_started", "sub")
    child = Execution.objects.get(pk=started.data["child_execution_id"])
    assert child.parent_execution_id == done.pk
    assert child.status == "succeeded"
    assert child.input == {"who": "ada"}
    assert child.output == {"hello": "ada"}
    live.wait(child.pk)  # verifies the child's log too


def test_a_failed_child_fails_the_parent_node(live) -> None:
    name = child_workflow(
        {
            "nodes": [
                {
                    "id": "boom",
                    "type": "function",
                    "function": "std.fail",
                    "input": {"message": "nope", "retryable": False},
                }
            ]
        }
    )
    parent = start({"nodes": [{"id": "sub", "type": "workflow", "workflow": name}]})
    done = live.wait(parent.pk)
    assert done.status == "failed"
    assert done.error["cause"]["type"] == "ChildWorkflowFailed"
    assert Task.objects.get(execution=done, node_id="sub").attempts == 1


def test_cancelling_the_parent_cancels_the_child(live) -> None:
    name = child_workflow({"nodes": [{"id": "wait", "type": "delay", "seconds": 600}]})
    parent = start({"nodes": [{"id": "sub", "type": "workflow", "workflow": name}]})
    deadline = time.monotonic() + 20
    while not events(parent, "child_workflow_started") and time.monotonic() < deadline:
        time.sleep(0.05)
    (started,) = events(parent, "child_workflow_started")
    from executions.services.control import execution_cancel

    execution_cancel(execution_id=parent.pk)
    assert live.wait(parent.pk).status == "cancelled"
    child = live.wait(started.data["child_execution_id"], timeout=20)
    assert child.status == "cancelled"
