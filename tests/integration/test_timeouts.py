"""A definition's timeout_seconds on real workers, timers and beat: the deadline fires
while a node sleeps, the node is cancelled, the saga runs, the execution ends failed with
a WorkflowTimeout; a sub-workflow gets what is left of its parent's deadline."""

from __future__ import annotations

import io
from datetime import datetime

from django.core.management import call_command

from executions.models import Execution, Task, Timer
from tests.factories import events, make_version, start
from tests.integration.engine import operator_client as api
from tests.integration.engine import wait_for

UNDO = {"type": "function", "function": "std.echo", "input": {"undo": "booked"}}


def verified(*executions: Execution) -> None:
    """replay_execution --verify on each, and verify_logs: chain, decisions and every row
    (the deadline timer included)."""
    for execution in executions:
        out = io.StringIO()
        call_command("replay_execution", str(execution.pk), "--verify", "--quiet", stdout=out)
        assert "every decision re-derived" in out.getvalue(), out.getvalue()
    call_command("verify_logs", *[str(e.pk) for e in executions])


def test_a_workflow_timeout_while_a_node_sleeps(live) -> None:
    execution = start(
        {
            "timeout_seconds": 2,
            "nodes": [
                {"id": "book", "type": "function", "function": "std.echo", "compensation": UNDO},
                {
                    "id": "slow",
                    "type": "function",
                    "function": "std.sleep",
                    "depends_on": ["book"],
                    "input": {"seconds": 120},
                },
                {"id": "never", "type": "function", "function": "std.echo", "depends_on": ["slow"]},
            ],
        }
    )
    wait_for(execution, "slow", "running")
    done = live.wait(execution.pk)
    assert done.status == "failed"
    assert done.error["type"] == "WorkflowTimeout"
    assert done.error["cancelled"] == ["slow", "never"]
    assert done.error["compensations"] == {"book": "succeeded"}
    (timed_out,) = events(done, "workflow_timed_out")
    (started,) = events(done, "workflow_started")
    assert timed_out.data == {"deadline_at": started.data["deadline_at"], "timeout_seconds": 2.0}
    deadline = datetime.fromisoformat(started.data["deadline_at"])
    assert (deadline - done.started_at).total_seconds() <= 2
    assert done.deadline_at == deadline
    (cancelled,) = events(done, "task_cancelled", "slow")
    assert cancelled.data == {"reason": "workflow timed out"}
    assert cancelled.seq > timed_out.seq
    assert Task.objects.get(execution=done, node_id="slow").status == "cancelled"
    assert Task.objects.get(execution=done, node_id="book.compensation").status == "succeeded"
    assert not events(done, "task_scheduled", "never")
    why = api().get(f"/executions/{done.pk}/tasks/slow/why").json()
    assert why["status"] == "cancelled"
    assert why["reasons"][0]["code"] == "workflow_timeout"
    assert why["reasons"][0]["deadline_at"] == started.data["deadline_at"]
    (timer,) = Timer.objects.filter(execution=done, kind="deadline")
    assert timer.due_at == deadline
    assert timer.fired_at is not None
    verified(done)


def test_a_child_gets_what_is_left_of_its_parents_deadline(live) -> None:
    child = make_version(
        {
            "timeout_seconds": 3600,
            "nodes": [{"id": "wait", "type": "delay", "seconds": 3600}],
        }
    ).workflow.name
    parent = start(
        {
            "timeout_seconds": 3,
            "nodes": [{"id": "sub", "type": "workflow", "workflow": child}],
        }
    )
    done = live.wait(parent.pk)
    assert done.status == "failed"
    assert done.error["type"] == "WorkflowTimeout"
    kid = live.wait(Execution.objects.get(parent_execution=done).pk)
    # Its own hour would outlive the parent: it has the parent's deadline instead.
    (started,) = events(kid, "workflow_started")
    assert started.data["deadline_at"] == done.deadline_at.isoformat()
    assert kid.deadline_at == done.deadline_at
    # Ended by its parent's cancel or by its own deadline, whichever came first.
    assert kid.status in ("cancelled", "failed")
    if kid.status == "failed":
        assert kid.error["type"] == "WorkflowTimeout"
    verified(done, kid)


def test_a_workflow_that_ends_in_time_closes_its_deadline(live) -> None:
    execution = start(
        {
            "timeout_seconds": 3600,
            "nodes": [{"id": "quick", "type": "function", "function": "std.echo"}],
        }
    )
    done = live.wait(execution.pk)
    assert done.status == "succeeded"
    assert not events(done, "workflow_timed_out")
    (timer,) = Timer.objects.filter(execution=done, kind="deadline")
    assert timer.fired_at is not None  # closed at the end: the sweeper has nothing to fire
    verified(done)
