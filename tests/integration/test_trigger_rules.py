"""Trigger rules on real workers: Airflow's meanings, and strict failure's exceptions."""

from __future__ import annotations

from typing import Any

from executions.models import Execution, Task
from executions.services import control
from tests.factories import start
from tests.integration.engine import wait_for

ECHO = {"type": "function", "function": "std.echo"}
FAIL = {
    "type": "function",
    "function": "std.fail",
    "input": {"message": "down", "retryable": False},
}


def joined(node_id: str, parents: list[str], rule: str, **fields: Any) -> dict[str, Any]:
    """An echo node that joins `parents` under `rule`."""
    return {"id": node_id, **ECHO, "depends_on": parents, "trigger_rule": rule, **fields}


def ended(live, execution: Execution) -> tuple[str, dict[str, str]]:
    """Once the execution has ended: its status and each node's."""
    done = live.wait(execution.pk)
    return done.status, dict(Task.objects.filter(execution=done).values_list("node_id", "status"))


def test_one_success_runs_while_its_other_parent_still_waits(live) -> None:
    execution = start(
        {
            "nodes": [
                {"id": "fast", **ECHO, "input": "fast"},
                {"id": "gate", "type": "approval"},
                joined("first", ["fast", "gate"], "one_success", input="{{ nodes.fast.output }}"),
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
                joined("alert", ["ok", "broken"], "one_failed", input="paged"),
                joined("all_bad", ["broken"], "all_failed"),
                joined("happy", ["ok", "broken"], "none_failed_min_one_success"),
                joined("strict", ["ok", "broken"], "none_skipped"),
                joined("salvage", ["ok", "broken"], "all_done_min_one_success"),
                joined("nothing_to_salvage", ["broken"], "all_done_min_one_success"),
                joined("report", ["broken"], "one_done"),
            ]
        }
    )
    assert ended(live, execution) == (
        "failed",
        {
            "ok": "succeeded",
            "broken": "failed",
            "alert": "succeeded",
            "all_bad": "succeeded",
            "happy": "skipped",
            "strict": "skipped",
            "salvage": "succeeded",
            "nothing_to_salvage": "skipped",
            "report": "succeeded",
        },
    )


def test_one_done_always_and_all_skipped_in_a_running_execution(live) -> None:
    execution = start(
        {
            "nodes": [
                {"id": "fast", **ECHO, "input": "fast"},
                {"id": "gate", "type": "approval"},
                {"id": "quiet_a", **ECHO, "when": "input.go"},
                {"id": "quiet_b", **ECHO, "when": "input.go"},
                joined("first_done", ["fast", "gate"], "one_done", input="{{ nodes.fast.output }}"),
                joined("anyway", ["gate"], "always"),
                joined("all_quiet", ["quiet_a", "quiet_b"], "all_skipped"),
                joined("not_all_quiet", ["fast", "quiet_a"], "all_skipped"),
            ]
        },
        {"go": False},
    )
    # Both run while the approval still waits: one_done on fast, always on nothing at all.
    wait_for(execution, "first_done", "succeeded")
    wait_for(execution, "anyway", "succeeded")
    assert Task.objects.get(execution=execution, node_id="gate").status == "waiting"
    control.signal_send(execution_id=execution.pk, node_id="gate", decision="approve")
    assert ended(live, execution) == (
        "succeeded",
        {
            "fast": "succeeded",
            "gate": "succeeded",
            "quiet_a": "skipped",
            "quiet_b": "skipped",
            "first_done": "succeeded",
            "anyway": "succeeded",
            "all_quiet": "succeeded",
            "not_all_quiet": "skipped",
        },
    )
    assert Task.objects.get(execution=execution, node_id="first_done").output == "fast"
