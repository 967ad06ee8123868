"""Pause/resume and why on real workers, beat and PostgreSQL/Redis (or the embedded
defaults): a paused execution's running attempts finish and record their results, its
queued attempt is not started, its due timer does not fire, and resume goes on from there."""

from __future__ import annotations

from django.db import transaction

from executions.models import Attempt, Event, Execution, Task, Timer
from executions.services.control import execution_cancel, execution_pause, execution_resume
from executions.services.why import why_execution, why_node
from tests.factories import events, make_version, start, timeline
from tests.waiting import eventually

NAP_AND_A_TIMER = {
    "nodes": [
        {"id": "nap", "type": "function", "function": "std.sleep", "input": {"seconds": 3}},
        {"id": "wait", "type": "delay", "seconds": 1},
        {"id": "after", "type": "function", "function": "std.noop", "depends_on": ["nap", "wait"]},
    ]
}
TWO = {
    "nodes": [
        {"id": "one", "type": "function", "function": "std.noop"},
        {"id": "two", "type": "function", "function": "std.noop", "depends_on": ["one"]},
    ]
}


def statuses(execution: Execution) -> dict[str, str]:
    return dict(Task.objects.filter(execution=execution).values_list("node_id", "status"))


def codes(entry: dict) -> list[str]:
    return [reason["code"] for reason in entry["reasons"]]


def test_pause_finishes_the_running_attempt_and_holds_everything_else(live) -> None:
    execution = start(NAP_AND_A_TIMER)
    eventually(
        lambda: statuses(execution)["nap"] == "running",
        30,
        lambda: f"never running: {timeline(execution)}",
    )
    execution_pause(execution_id=execution.pk, by="ops")

    entries = {e["node_id"]: e for e in why_execution(Execution.objects.get(pk=execution.pk))}
    reason = entries["nap"]["reasons"][0]
    assert reason["code"] == "running", reason
    assert reason["worker"], reason
    assert reason["lease_expires_at"] is not None
    assert codes(entries["wait"]) == ["timer", "execution_paused"]
    assert codes(entries["after"]) == ["waiting_for_parents", "execution_paused"]

    # The running attempt finishes and records its result while paused ...
    eventually(
        lambda: events(execution, "task_completed", "nap"),
        30,
        lambda: f"never recorded nap's result: {timeline(execution)}",
    )
    # ... but the timer, due by now, never fires and nothing new is scheduled: its own
    # message has run (at its due time) and so has a whole sweep after it, and both
    # found the execution paused.
    live.timer_ran(Timer.objects.get(execution=execution, node_id="wait"))
    live.swept()
    assert events(execution, "timer_fired") == []
    assert events(execution, "task_scheduled", "after") == []
    assert Execution.objects.get(pk=execution.pk).status == "paused"
    paused_at = events(execution, "workflow_paused")[0].seq
    decided = Event.objects.filter(execution=execution, seq__gt=paused_at, source="engine")
    assert not decided.exists(), timeline(execution)

    execution_resume(execution_id=execution.pk, by="ops")
    done = live.wait(execution.pk)  # also checks replay --verify and the hash chain
    assert done.status == "succeeded", timeline(done)
    resumed = events(done, "workflow_resumed")[0]
    assert resumed.data == {"by": "ops"}
    assert events(done, "timer_fired")[0].seq > resumed.seq


def test_a_queued_attempt_is_not_claimed_while_paused(live) -> None:
    # Paused in the transaction that scheduled it: its message reaches a worker only after.
    with transaction.atomic():
        execution = start(TWO)
        execution_pause(execution_id=execution.pk, by="ops")
    assert Attempt.objects.get(execution=execution, node_id="one").status == "scheduled"
    entry = why_node(Execution.objects.get(pk=execution.pk), "one")
    assert codes(entry) == ["queued", "execution_paused"]
    # Its message is delivered and refused (the worker's task for it returned), and a
    # whole sweep after that starts nothing either.
    live.message_over(execution, "one")
    live.swept()
    assert statuses(execution)["one"] == "scheduled"
    assert events(execution, "task_started") == []
    execution_resume(execution_id=execution.pk, by="ops")
    done = live.wait(execution.pk)
    assert done.status == "succeeded", timeline(done)
    assert events(done, "task_started", "one")[0].seq > events(done, "workflow_resumed")[0].seq


def test_why_running_retry_backoff_and_waiting_for_child(live) -> None:
    child = make_version({"nodes": [{"id": "hold", "type": "approval"}]})
    execution = start(
        {
            "nodes": [
                {
                    "id": "flaky",
                    "type": "function",
                    "function": "std.fail",
                    "input": {"message": "try later"},
                    "retry_policy": {
                        "max_attempts": 2,
                        "initial_interval_seconds": 600,
                        "max_interval_seconds": 600,
                    },
                },
                {"id": "sub", "type": "workflow", "workflow": child.workflow.name},
                {
                    "id": "nap",
                    "type": "function",
                    "function": "std.sleep",
                    "input": {"seconds": 60},
                },
            ]
        }
    )
    eventually(
        lambda: (
            statuses(execution)["flaky"] == "retrying"
            and statuses(execution)["nap"] == "running"
            and Execution.objects.filter(parent_execution=execution, status="running").exists()
        ),
        30,
        lambda: f"never retrying, running and a running child: {timeline(execution)}",
    )
    entries = {e["node_id"]: e for e in why_execution(Execution.objects.get(pk=execution.pk))}
    (backoff,) = entries["flaky"]["reasons"]
    assert backoff["code"] == "retry_backoff"
    assert backoff["attempt"] == 2
    assert (
        backoff["due_at"]
        == Task.objects.get(execution=execution, node_id="flaky").next_retry_at.isoformat()
    )
    (waiting,) = entries["sub"]["reasons"]
    sub = Execution.objects.get(parent_execution=execution)
    assert waiting == {
        "code": "waiting_for_child",
        "message": f"waiting for the child execution {sub.pk} to end",
        "child_execution_id": str(sub.pk),
    }
    (running,) = entries["nap"]["reasons"]
    nap = Attempt.objects.get(execution=execution, node_id="nap")
    assert running["code"] == "running"
    assert running["worker"] == nap.worker_id != ""
    child_why = why_node(sub, "hold")
    assert codes(child_why) == ["waiting_for_approval"]
    execution_cancel(execution_id=execution.pk, by="ops")
    assert live.wait(execution.pk).status == "cancelled"
    assert live.wait(sub.pk).status == "cancelled"
