"""The core engine end to end (a DAG in order, HTTP retries with backoff, a non-retryable
failure, a delay that holds no worker): real worker and beat processes, on whatever
database and broker the run is configured with (./dev test runs this file on PostgreSQL +
Redis and again on the embedded SQLite + filesystem broker)."""

from __future__ import annotations

from executions.kernel.log import state_at
from executions.kernel.projections import differences
from executions.models import Attempt, AttemptStatus, Task
from tests.factories import events, start, timeline
from tests.servers import http_server
from tests.waiting import eventually

SIGNUP = {
    "nodes": [
        {
            "id": "verify",
            "type": "function",
            "function": "std.echo",
            "input": {"user_id": "{{ input.user_id }}", "verified": True},
        },
        {
            "id": "workspace",
            "type": "function",
            "function": "std.echo",
            "depends_on": ["verify"],
            "input": {"owner": "{{ nodes.verify.output.user_id }}"},
        },
        {
            "id": "email",
            "type": "function",
            "function": "std.sleep",
            "depends_on": ["workspace"],
            "input": {"seconds": 0.3, "to": "user-{{ input.user_id }}@example.com"},
        },
        {
            "id": "team",
            "type": "function",
            "function": "std.sleep",
            "depends_on": ["workspace"],
            "input": {"seconds": 0.3, "owner": "{{ nodes.workspace.output.owner }}"},
        },
        {
            "id": "done",
            "type": "function",
            "function": "std.echo",
            "depends_on": ["email", "team"],
            "input": {"email": "{{ nodes.email.output.to }}", "team": "{{ nodes.team.output }}"},
        },
    ],
    "output": "{{ nodes.done.output }}",
}


def seq_of(execution, type: str, node_id: str) -> int:
    (event,) = events(execution, type, node_id)
    return event.seq


def assert_log_is_sound(execution) -> None:
    seqs = [seq for seq, *_ in timeline(execution)]
    assert seqs == list(range(1, len(seqs) + 1)), f"gap or duplicate in {seqs}"
    execution.refresh_from_db()
    assert differences(execution, state_at(execution.pk)) == []


def test_user_signup_dag_runs_in_order(live) -> None:
    execution = start(SIGNUP, {"user_id": 42})
    done = live.wait(execution.pk)
    assert done.status == "succeeded", (done.error, timeline(done))
    assert done.output == {"email": "user-42@example.com", "team": {"seconds": 0.3, "owner": 42}}
    workspace_done = seq_of(done, "task_completed", "workspace")
    for branch in ("email", "team"):
        assert seq_of(done, "task_scheduled", branch) > workspace_done
    assert seq_of(done, "task_scheduled", "done") > max(
        seq_of(done, "task_completed", "email"), seq_of(done, "task_completed", "team")
    )
    kinds = [kind for _, kind, _, _ in timeline(done)]
    assert kinds[0] == "workflow_started"
    assert kinds[-1] == "workflow_completed"
    assert kinds.count("task_scheduled") == kinds.count("task_started") == 5
    assert kinds.count("task_completed") == 5
    assert set(Task.objects.filter(execution=done).values_list("status", flat=True)) == {
        "succeeded"
    }
    assert_log_is_sound(done)


def test_http_node_retries_503_with_growing_backoff_and_succeeds_on_attempt_3(live) -> None:
    def flaky(request, seen):  # 503 twice, then 200
        return (200, {"workspace": "ws-1"}) if len(seen) > 2 else (503, {"error": "busy"})

    with http_server(flaky) as server:
        execution = start(
            {
                "nodes": [
                    {
                        "id": "workspace",
                        "type": "http",
                        "request": {
                            "method": "POST",
                            "url": f"{server.url}/workspaces",
                            "json": {"owner": 1},
                        },
                    }
                ],
                "retry_policy": {
                    "max_attempts": 5,
                    "initial_interval_seconds": 0.5,
                    "backoff_coefficient": 2.0,
                },
            }
        )
        done = live.wait(execution.pk, timeout=60)
    assert done.status == "succeeded", (done.error, timeline(done))
    task = Task.objects.get(execution=done, node_id="workspace")
    assert task.attempts == 3
    assert task.retry_count == 2
    assert task.output["status_code"] == 200
    assert task.output["body"] == {"workspace": "ws-1"}
    delays = [e.data["delay_seconds"] for e in events(done, "task_retry_scheduled")]
    assert len(delays) == 2, delays
    assert 0 < delays[0] < delays[1], delays
    failures = events(done, "task_failed")
    assert [e.attempt for e in failures] == [1, 2]
    assert all(
        e.data["error"]["details"]["status_code"] == 503
        if "details" in e.data["error"]
        else e.data["error"]["status_code"] == 503
        for e in failures
    )
    # The backoff really was waited: attempt 2 starts no sooner than its recorded delay.
    retry1 = events(done, "task_retry_scheduled")[0]
    start2 = next(e for e in events(done, "task_started") if e.attempt == 2)
    assert (start2.timestamp - retry1.timestamp).total_seconds() >= delays[0]
    keys = {request.headers.get("Idempotency-Key") for request in server.seen}
    assert keys == {f"{done.pk}:workspace"}
    assert len(server.seen) == 3
    assert_log_is_sound(done)


def test_non_retryable_failure_fails_execution_after_one_attempt(live) -> None:
    execution = start(
        {
            "nodes": [
                {
                    "id": "charge",
                    "type": "function",
                    "function": "std.fail",
                    "input": {"message": "card declined", "retryable": False},
                },
                {
                    "id": "ship",
                    "type": "function",
                    "function": "std.echo",
                    "depends_on": ["charge"],
                },
                {
                    "id": "notify",
                    "type": "function",
                    "function": "std.echo",
                    "depends_on": ["ship"],
                },
            ],
            "retry_policy": {"max_attempts": 5},
        }
    )
    done = live.wait(execution.pk)
    assert done.status == "failed"
    assert "charge" in done.error["message"]
    charge = Task.objects.get(execution=done, node_id="charge")
    assert charge.status == "failed"
    assert charge.attempts == 1
    assert charge.error["message"] == "card declined"
    assert events(done, "task_retry_scheduled") == []
    for dependent in ("ship", "notify"):
        assert events(done, "task_scheduled", dependent) == []
        assert Task.objects.get(execution=done, node_id=dependent).status == "skipped"
    assert not Attempt.objects.filter(execution=done, node_id__in=["ship", "notify"]).exists()
    assert_log_is_sound(done)


def test_delay_node_holds_dependents_without_a_busy_worker(live) -> None:
    execution = start(
        {
            "nodes": [
                {"id": "before", "type": "function", "function": "std.noop"},
                {"id": "cool_off", "type": "delay", "seconds": 2, "depends_on": ["before"]},
                {
                    "id": "after",
                    "type": "function",
                    "function": "std.noop",
                    "depends_on": ["cool_off"],
                },
            ]
        }
    )
    busy_during_delay = 0

    def delay_over() -> bool:
        """Counting, while the delay waits, the attempts running (a worker held by it)."""
        nonlocal busy_during_delay
        task = Task.objects.get(execution=execution, node_id="cool_off")
        if task.status == "waiting":
            busy_during_delay += Attempt.objects.filter(
                execution=execution, status=AttemptStatus.RUNNING
            ).count()
        return task.status in ("succeeded", "failed")

    eventually(delay_over, 30, "the delay never ended")
    done = live.wait(execution.pk)
    assert done.status == "succeeded", (done.error, timeline(done))
    assert busy_during_delay == 0
    (started,) = events(done, "timer_started", "cool_off")
    (fired,) = events(done, "timer_fired", "cool_off")
    (after,) = events(done, "task_scheduled", "after")
    assert (fired.timestamp - started.timestamp).total_seconds() >= 2.0
    assert (after.timestamp - started.timestamp).total_seconds() >= 2.0
    assert not Attempt.objects.filter(execution=done, node_id="cool_off").exists()
    assert_log_is_sound(done)
