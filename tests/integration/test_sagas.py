"""Sagas on real workers: compensate on cancel, and a retry after compensation redoes the
undone nodes instead of counting them succeeded."""

from __future__ import annotations

from typing import Any

from django.core.management import call_command

from executions.models import Task
from executions.services import control
from tests.factories import events, start
from tests.integration.engine import wait_for


def saga(*, compensate_on_cancel: bool = False) -> dict[str, Any]:
    return {
        "compensate_on_cancel": compensate_on_cancel,
        "nodes": [
            {
                "id": "reserve",
                "type": "function",
                "function": "std.echo",
                "input": {"seat": "12A"},
                "compensation": {
                    "type": "function",
                    "function": "std.echo",
                    "input": {"release": "{{ nodes.reserve.output.seat }}"},
                },
            },
            {"id": "gate", "type": "approval", "depends_on": ["reserve"]},
        ],
    }


def statuses(execution) -> dict[str, str]:
    return dict(Task.objects.filter(execution=execution).values_list("node_id", "status"))


def test_a_cancel_compensates_succeeded_nodes_when_asked(live) -> None:
    plain = start(saga())
    undoing = start(saga(compensate_on_cancel=True))
    for execution in (plain, undoing):
        wait_for(execution, "gate", "waiting")
        control.execution_cancel(execution_id=execution.pk, by="t")
    assert live.wait(plain.pk).status == "cancelled"
    assert events(plain, "compensation_scheduled") == []
    done = live.wait(undoing.pk)
    assert done.status == "cancelled"
    assert statuses(done) == {
        "reserve": "succeeded",
        "gate": "cancelled",
        "reserve.compensation": "succeeded",
    }
    release = Task.objects.get(execution=done, node_id="reserve.compensation")
    assert release.output == {"release": "12A"}
    (ended,) = events(done, "workflow_cancelled")
    assert ended.data["reason"] == "cancel requested; compensated"


def test_a_retry_after_compensation_runs_the_undone_nodes_again(live) -> None:
    cancelled = start(saga(compensate_on_cancel=True))
    failed = start(saga())
    wait_for(cancelled, "gate", "waiting")
    control.execution_cancel(execution_id=cancelled.pk, by="t")
    wait_for(failed, "gate", "waiting")
    control.signal_send(execution_id=failed.pk, node_id="gate", decision="reject")
    assert live.wait(cancelled.pk).status == "cancelled"
    assert live.wait(failed.pk).status == "failed"
    for execution in (cancelled, failed):
        assert statuses(execution)["reserve.compensation"] == "succeeded"
        control.execution_retry(execution_id=execution.pk, by="t")
        wait_for(execution, "gate", "waiting")
        reserve = Task.objects.get(execution=execution, node_id="reserve")
        assert (reserve.status, reserve.attempts) == ("succeeded", 2)
        assert len(events(execution, "task_completed", "reserve")) == 2
        control.signal_send(execution_id=execution.pk, node_id="gate", decision="approve")
        done = live.wait(execution.pk)
        assert done.status == "succeeded"
        # The undo belongs to the run it undid: reset, and not run again on success.
        assert statuses(done)["reserve.compensation"] == "pending"
        call_command("verify_logs", str(done.pk))  # chain, decisions and every row
