"""Pause/resume and why on real workers, beat and PostgreSQL/Redis (or the embedded
defaults): a paused execution's running attempts finish and record their results, its
queued attempt is not started, its due timer does not fire, and resume goes on from there."""

from __future__ import annotations

import time

from django.utils import timezone

from executions.models import Attempt, Event, Execution, Task, Timer
from executions.services.control import execution_cancel, execution_pause, execution_resume
from executions.services.why import why_execution, why_node
from tests.factories import events, make_version, start, timeline

SLEEP = {"type": "function", "function": "std.sleep", "input": {"seconds": 3}}
THREE_AND_A_TIMER = {
    "nodes": [
        {"id": "s1", **SLEEP},
        {"id": "s2", **SLEEP},
        {"id": "s3", **SLEEP},
        {"id": "wait", "type": "delay", "seconds": 1},
        {
            "id": "after",
            "type": "function",
            "function": "std.noop",
            "depends_on": ["s1", "s2", "s3", "wait"],
        },
    ]
}


def statuses(execution: Execution) -> dict[str, str]:
    return dict(Task.objects.filter(execution=execution).values_list("node_id", "status"))


def until(check, what: str, execution: Execution, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"never {what}: {timeline(execution)}")


def codes(entry: dict) -> list[str]:
    return [reason["code"] for reason in entry["reasons"]]


def test_pause_finishes_running_attempts_and_holds_everything_else(live) -> None:
    execution = start(THREE_AND_A_TIMER)
    sleeps = ("s1", "s2", "s3")
    # The session's worker runs two attempts at once: the third waits in the queue.
    until(
        lambda: sum(statuses(execution)[s] == "running" for s in sleeps) == 2,
        "2 running",
        execution,
    )
    execution_pause(execution_id=execution.pk, by="ops")
    now = statuses(execution)
    running = [s for s in sleeps if now[s] == "running"]
    queued = [s for s in sleeps if now[s] == "scheduled"]
    assert (len(running), len(queued)) == (2, 1), now

    entries = {e["node_id"]: e for e in why_execution(Execution.objects.get(pk=execution.pk))}
    for node in running:
        reason = entries[node]["reasons"][0]
        assert reason["code"] == "running", reason
        assert reason["worker"], reason
        assert reason["lease_expires_at"] is not None
    assert codes(entries[queued[0]]) == ["queued", "execution_paused"]
    assert codes(entries["wait"]) == ["timer", "execution_paused"]
    assert codes(entries["after"]) == ["waiting_for_parents", "execution_paused"]

    # Running attempts finish and record their results while paused ...
    until(
        lambda: all(events(execution, "task_completed", s) for s in running),
        "recorded the running attempts' results",
        execution,
    )
    # ... but the queued one is never claimed and the timer, due by now, never fires.
    due = Timer.objects.get(execution=execution, node_id="wait").due_at
    time.sleep(max(0.0, (due - timezone.now()).total_seconds()) + 3)  # three sweeps past due
    assert statuses(execution)[queued[0]] == "scheduled"
    assert events(execution, "task_started", queued[0]) == []
    assert events(execution, "timer_fired") == []
    assert events(execution, "task_scheduled", "after") == []
    assert Execution.objects.get(pk=execution.pk).status == "paused"
    paused_at = events(execution, "workflow_paused")[0].seq
    decided = Event.objects.filter(execution=execution, seq__gt=paused_at, source="engine")
    assert not decided.exists(), timeline(execution)

    execution_resume(execution_id=execution.pk, by="ops")
    done = live.wait(execution.pk)  # also checks replay --verify and the hash chain
    assert done.status == "succeeded", timeline(done)
    assert set(statuses(done).values()) == {"succeeded"}
    resumed = events(done, "workflow_resumed")[0]
    assert resumed.data == {"by": "ops"}
    assert events(done, "task_started", queued[0])[0].seq > resumed.seq
    assert events(done, "timer_fired")[0].seq > resumed.seq


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
    until(
        lambda: (
            statuses(execution)["flaky"] == "retrying"
            and statuses(execution)["nap"] == "running"
            and Execution.objects.filter(parent_execution=execution, status="running").exists()
        ),
        "retrying, running and a running child",
        execution,
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
