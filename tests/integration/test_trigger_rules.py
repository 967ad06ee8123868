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


def test_one_done_always_and_all_skipped_in_a_running_execution(live) -> None:
    execution = start(
        {
            "nodes": [
                {"id": "fast", **ECHO, "input": "fast"},
                {"id": "gate", "type": "approval"},
                {"id": "quiet_a", **ECHO, "when": "input.go"},
                {"id": "quiet_b", **ECHO, "when": "input.go"},
                {
                    "id": "first_done",
                    **ECHO,
                    "depends_on": ["fast", "gate"],
                    "trigger_rule": "one_done",
                    "input": "{{ nodes.fast.output }}",
                },
                {"id": "anyway", **ECHO, "depends_on": ["gate"], "trigger_rule": "always"},
                {
                    "id": "all_quiet",
                    **ECHO,
                    "depends_on": ["quiet_a", "quiet_b"],
                    "trigger_rule": "all_skipped",
                },
                {
                    "id": "not_all_quiet",
                    **ECHO,
                    "depends_on": ["fast", "quiet_a"],
                    "trigger_rule": "all_skipped",
                },
            ]
        },
        {"go": False},
    )
    # Both run while the approval still waits: one_done on fast, always on nothing at all.
    wait_for(execution, "first_done", "succeeded")
    wait_for(execution, "anyway", "succeeded")
    assert Task.objects.get(execution=execution, node_id="gate").status == "waiting"
    control.signal_send(execution_id=execution.pk, node_id="gate", decision="approve")
    done = live.wait(execution.pk)
    assert done.status == "succeeded"
    statuses = dict(Task.objects.filter(execution=done).values_list("node_id", "status"))
    assert statuses == {
        "fast": "succeeded",
        "gate": "succeeded",
        "quiet_a": "skipped",
        "quiet_b": "skipped",
        "first_done": "succeeded",
        "anyway": "succeeded",
        "all_quiet": "succeeded",
        "not_all_quiet": "skipped",
    }
    assert Task.objects.get(execution=done, node_id="first_done").output == "fast"


def test_one_done_and_all_done_min_one_success_run_after_a_failure(live) -> None:
    execution = start(
        {
            "nodes": [
                {"id": "ok", **ECHO, "input": 1},
                {"id": "broken", **FAIL},
                {
                    "id": "salvage",
                    **ECHO,
                    "depends_on": ["ok", "broken"],
                    "trigger_rule": "all_done_min_one_success",
                },
                {
                    "id": "nothing_to_salvage",
                    **ECHO,
                    "depends_on": ["broken"],
                    "trigger_rule": "all_done_min_one_success",
                },
                {"id": "report", **ECHO, "depends_on": ["broken"], "trigger_rule": "one_done"},
            ]
        }
    )
    done = live.wait(execution.pk)
    assert done.status == "failed"
    statuses = dict(Task.objects.filter(execution=done).values_list("node_id", "status"))
    assert statuses == {
        "ok": "succeeded",
        "broken": "failed",
        "salvage": "succeeded",
        "nothing_to_salvage": "skipped",
        "report": "succeeded",
    }
