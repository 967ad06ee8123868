"""Trigger rules on real workers: Airflow's meanings, and strict failure's exceptions."""

from __future__ import annotations

from executions.models import Task
from executions.services import control
from tests.factories import start
from tests.integration.engine import wait_for

ECHO = {"type": "function", "function": "std.echo"}
FAIL = {
    "type": "function",
    "function": "std.fail",
    "input": {"message": "down", "retryable": False},
}


def test_one_success_runs_while_its_other_parent_still_waits(live) -> None:
    execution = start(
        {
            "nodes": [
                {"id": "fast", **ECHO, "input": "fast"},
                {"id": "gate", "type": "approval"},
                {
                    "id": "first",
                    **ECHO,
                    "depends_on": ["fast", "gate"],
                    "trigger_rule": "one_success",
                    "input": "{{ nodes.fast.output }}",
                },
            ]
        }
    )
    wait_for(execution, "first", "succeeded")
    assert Task.objects.get(execution=execution, node_id="gate").status == "waiting"
    control.signal_send(execution_id=execution.pk, node_id="gate", decision="approve")
    done = live.wait(execution.pk)
    assert done.status == "succeeded"
    assert Task.objects.get(execution=done, node_id="first").output == "fast"


def test_after_failure_rules_run_and_the_execution_still_fails(live) -> None:
    execution = start(
        {
            "nodes": [
                {"id": "ok", **ECHO, "input": 1},
                {"id": "broken", **FAIL},
                {
                    "id": "alert",
                    **ECHO,
                    "depends_on": ["ok", "broken"],
                    "trigger_rule": "one_failed",
                    "input": "paged",
                },
                {"id": "all_bad", **ECHO, "depends_on": ["broken"], "trigger_rule": "all_failed"},
                {
                    "id": "happy",
                    **ECHO,
                    "depends_on": ["ok", "broken"],
                    "trigger_rule": "none_failed_min_one_success",
                },
                {
                    "id": "strict",
                    **ECHO,
                    "depends_on": ["ok", "broken"],
                    "trigger_rule": "none_skipped",
                },
            ]
        }
    )
    done = live.wait(execution.pk)
    assert done.status == "failed"
    statuses = dict(Task.objects.filter(execution=done).values_list("node_id", "status"))
    assert statuses == {
        "ok": "succeeded",
        "broken": "failed",
        "alert": "succeeded",
        "all_bad": "succeeded",
        "happy": "skipped",
        "strict": "skipped",
    }
