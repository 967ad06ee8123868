"""Strict failure with compensations: succeeded nodes are undone, latest first."""

from __future__ import annotations

from executions.models import Task
from tests.factories import events, start


def test_failure_runs_compensations_in_reverse_completion_order(live) -> None:
    undo = {"type": "function", "function": "std.echo"}
    execution = start(
        {
            "nodes": [
                {
                    "id": "reserve",
                    "type": "function",
                    "function": "std.echo",
                    "input": {"seat": "{{ input.seat }}"},
                    "compensation": {
                        **undo,
                        "input": {"release": "{{ nodes.reserve.output.seat }}"},
                    },
                },
                {
                    "id": "hold",
                    "type": "function",
                    "function": "std.echo",
                    "depends_on": ["reserve"],
                    "input": {"card": "visa"},
                    "compensation": {**undo, "input": {"unhold": "{{ nodes.hold.output.card }}"}},
                },
                {
                    "id": "charge",
                    "type": "function",
                    "function": "std.fail",
                    "depends_on": ["hold"],
                    "input": {"message": "declined", "retryable": False},
                    "compensation": {**undo, "input": "never: charge did not succeed"},
                },
            ]
        },
        {"seat": "12A"},
    )
    done = live.wait(execution.pk)
    assert done.status == "failed"
    assert done.error["compensations"] == {"hold": "succeeded", "reserve": "succeeded"}
    order = [e.node_id for e in events(done, "compensation_scheduled")]
    assert order == ["hold", "reserve"]
    release = Task.objects.get(execution=done, node_id="reserve.compensation")
    assert release.status == "succeeded"
    assert release.output == {"release": "12A"}
    unhold = Task.objects.get(execution=done, node_id="hold.compensation")
    assert unhold.output == {"unhold": "visa"}
    assert not Task.objects.filter(execution=done, node_id="charge.compensation").exists()
    # The second compensation starts only after the first one finished.
    (hold_done,) = events(done, "task_completed", "hold.compensation")
    (reserve_started,) = events(done, "task_scheduled", "reserve.compensation")
    assert reserve_started.seq > hold_done.seq
