"""`workflow` nodes: a child execution per attempt, its output as the node's output."""

from __future__ import annotations

import uuid

from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from executions.models import Execution, Task, Timer
from tests.factories import events, make_version, start
from tests.integration.engine import wait_for
from tests.waiting import eventually


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
    (started,) = eventually(
        lambda: events(parent, "child_workflow_started"), 20, "the parent started no child"
    )
    from executions.services.control import execution_cancel

    execution_cancel(execution_id=parent.pk)
    assert live.wait(parent.pk).status == "cancelled"
    child = live.wait(started.data["child_execution_id"], timeout=20)
    assert child.status == "cancelled"


def started_child(parent: Execution, node_id: str, timeout: float = 30) -> Execution:
    found = eventually(
        lambda: events(parent, "child_workflow_started", node_id),
        timeout,
        f"{node_id} started no child",
    )
    return Execution.objects.get(pk=found[0].data["child_execution_id"])


def test_a_signal_node_inside_a_sub_workflow_is_reached_by_the_childs_id(live) -> None:
    name = child_workflow(
        {
            "nodes": [
                {"id": "paid", "type": "signal", "signal": "payment", "timeout_seconds": 3600}
            ],
            "output": "{{ nodes.paid.output }}",
        }
    )
    parent = start(
        {
            "nodes": [
                {"id": "sub", "type": "workflow", "workflow": name},
                {
                    "id": "after",
                    "type": "function",
                    "function": "std.echo",
                    "depends_on": ["sub"],
                    "input": "{{ nodes.sub.output.amount }}",
                },
            ]
        }
    )
    child = started_child(parent, "sub")
    wait_for(child, "paid", "waiting")
    client = APIClient()
    client.force_authenticate(
        get_user_model().objects.create_superuser(f"op-{uuid.uuid4().hex[:8]}")
    )
    # The parent has no node waiting for it: a signal goes to the execution that waits.
    to_parent = client.post(f"/executions/{parent.pk}/signals/payment", {}, format="json")
    assert to_parent.status_code == 404
    assert "payment" in to_parent.json()["detail"]
    url = f"/executions/{child.pk}/signals/payment"
    assert client.post(url, {"data": {"amount": 12}}, format="json").status_code == 202
    done = live.wait(parent.pk)
    assert (done.status, done.output) == ("succeeded", {"after": 12})
    child = live.wait(child.pk)  # verifies the child's log too
    assert (child.status, child.output) == ("succeeded", {"amount": 12})
    assert Timer.objects.get(execution=child, kind="timeout").fired_at is not None
