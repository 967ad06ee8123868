"""heartbeat_timeout_seconds means progress: a function that stops calling ctx.heartbeat()
is timed out though its process lives, and its worker slot is freed."""

from __future__ import annotations

from django.core.management import call_command

from executions.models import Task
from tests import stuck_functions  # noqa: F401  (registers test.stalls here too)
from tests.factories import events, start
from tests.integration.test_containment_bounds import only_worker
from tests.waiting import eventually


def node(function: str, **extra) -> dict:
    return {
        "nodes": [
            {
                "id": "work",
                "type": "function",
                "function": function,
                "heartbeat_timeout_seconds": 1,
                "retry_policy": {"max_attempts": 1},
                **extra,
            }
        ]
    }


def test_a_function_that_stops_heartbeating_times_out_and_frees_its_slot(live) -> None:
    with only_worker(live) as log:
        # Alive and heartbeating for 3 s, past its 1 s heartbeat timeout: it succeeds.
        steady = start(node("test.progresses"))
        # Two stalls take both pool processes: only freed slots can run more work.
        stalled = [start(node("test.stalls")) for _ in range(2)]
        assert live.wait(steady.pk, timeout=60).status == "succeeded"
        for execution in stalled:
            done = live.wait(execution.pk, timeout=60)
            assert done.status == "failed"
            (timed_out,) = events(done, "task_timed_out", "work")
            assert timed_out.source == "worker"
            error = timed_out.data["error"]
            assert error["type"] == "HeartbeatTimeout", error
            assert "no ctx.heartbeat() for 1 s" in error["message"]
            assert Task.objects.get(execution=done, node_id="work").status == "failed"
            call_command("verify_logs", str(done.pk))
        # Both processes were stalled: only a freed slot runs this (the hard limit is
        # WORKFLOW_ATTEMPT_HARD_LIMIT_SECONDS, an hour by default, far past the wait).
        quick = start({"nodes": [{"id": "ping", "type": "function", "function": "std.noop"}]})
        assert live.wait(quick.pk, timeout=60).status == "succeeded"
        # The second stall's process is replaced a grace after its timeout is recorded.
        eventually(
            lambda: log.read_text(errors="replace").count("exited with 'exitcode 70'") == 2,
            30,
            "both stalled processes were not replaced",
        )
