"""Counterfactual replay over the golden histories: what each recorded execution would
have done under a changed version of its workflow. Pure: no database."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from executions.engine.counterfactual import Report, counterfactual
from executions.engine.retry import retry_delay
from tests.golden.test_golden_histories import engine_events, load
from workflows.dsl.parser import parse_definition

HISTORIES = Path(__file__).parent / "histories"


def against(name: str, change: Any = None, **kwargs: Any) -> Report:
    """The golden history `name` replayed against its definition as `change` edits it."""
    record = load(HISTORIES / f"{name}.json")
    raw = copy.deepcopy(record["definition"])
    if change is not None:
        change(raw)
    return counterfactual(
        parse_definition(record["definition"]),
        parse_definition(raw),
        engine_events(record),
        execution_id=record["execution_id"],
        **kwargs,
    )


def node(raw: dict[str, Any], node_id: str) -> dict[str, Any]:
    return next(n for n in raw["nodes"] if n["id"] == node_id)


def test_an_unchanged_version_does_not_diverge_and_reuses_every_success() -> None:
    report = against("signup")
    assert report.diverges_at is None
    assert report.reason is None
    assert report.decisions == []
    assert report.reused == ["verify", "workspace", "cool_off", "email", "done"]
    # vip was skipped by its condition: it is decided again (skipped again), not reused.
    assert report.would_run == ["vip"]


def test_every_golden_history_is_unchanged_against_its_own_version() -> None:
    for path in sorted(HISTORIES.glob("*.json")):
        assert against(path.stem).diverges_at is None, path.stem


def test_a_node_added_at_the_end_diverges_where_the_workflow_completed() -> None:
    def add(raw: dict[str, Any]) -> None:
        raw["nodes"].append(
            {"id": "audit", "type": "function", "function": "std.noop", "depends_on": ["done"]}
        )

    report = against("signup", add)
    assert report.diverges_at == 18
    assert report.decisions == [
        {
            "seq": 18,
            "would_decide": {
                "type": "task_scheduled",
                "node_id": "audit",
                "attempt": 1,
                "data": {"input": None, "type": "function"},
            },
            "recorded": {
                "type": "workflow_completed",
                "node_id": None,
                "attempt": None,
                "data": {"output": {"email": "user-7@example.com"}},
            },
            "same": False,
        }
    ]
    assert "task_scheduled node 'audit'" in str(report.reason)
    assert "workflow_completed" in str(report.reason)
    assert report.reused == ["verify", "workspace", "cool_off", "email", "done"]
    assert report.would_run == ["vip", "audit"]


def test_a_node_added_at_the_start_diverges_in_the_first_decisions() -> None:
    def add(raw: dict[str, Any]) -> None:
        raw["nodes"].insert(0, {"id": "first", "type": "function", "function": "std.noop"})

    report = against("signup", add)
    # The first run recorded only `verify`; the new version would start `first` before it.
    assert report.diverges_at == 2
    assert [(d["seq"], d["same"]) for d in report.decisions] == [(2, False), (3, False)]
    assert report.reused == []
    assert report.would_run[0] == "first"


def test_a_removed_node_diverges_where_it_was_decided() -> None:
    def remove(raw: dict[str, Any]) -> None:
        raw["nodes"].remove(node(raw, "vip"))
        node(raw, "done")["depends_on"] = ["email"]

    report = against("signup", remove)
    assert report.diverges_at == 12
    pairs = [(d["seq"], d["same"]) for d in report.decisions]
    assert pairs == [(10, True), (11, True), (12, False)]
    assert report.decisions[-1]["would_decide"] is None
    assert report.decisions[-1]["recorded"]["node_id"] == "vip"
    assert "would not decide it" in str(report.reason)
    # cool_off completed at seq 10, email was only scheduled (seq 11) by the divergence.
    assert report.reused == ["verify", "workspace", "cool_off"]
    assert report.would_run == ["email", "done"]


def test_a_changed_condition_diverges_where_the_node_was_skipped() -> None:
    def change(raw: dict[str, Any]) -> None:
        node(raw, "vip")["when"] = "input.user_id"

    report = against("signup", change)
    assert report.diverges_at == 12
    last = report.decisions[-1]
    assert (last["would_decide"]["type"], last["recorded"]["type"]) == (
        "task_scheduled",
        "task_skipped",
    )
    assert report.reused == ["verify", "workspace", "cool_off"]


def test_a_changed_retry_policy_diverges_at_the_first_retry_with_its_own_jitter() -> None:
    def slower(raw: dict[str, Any]) -> None:
        raw["retry_policy"]["initial_interval_seconds"] = 1.0

    record = load(HISTORIES / "http_retries.json")
    report = against("http_retries", slower)
    assert report.diverges_at == 5
    would = report.decisions[-1]["would_decide"]
    assert would["type"] == "task_retry_scheduled"
    policy = parse_definition(
        {
            **record["definition"],
            "retry_policy": {
                **record["definition"]["retry_policy"],
                "initial_interval_seconds": 1.0,
            },
        }
    ).nodes[0]
    expected = retry_delay(
        policy.retry_policy, execution_id=record["execution_id"], node_id="call", attempt=1
    )
    assert would["data"]["delay_seconds"] == expected
    assert 0.8 <= expected <= 1.0  # jittered down by at most 20%, never up
    assert "delay_seconds" in str(report.reason)
    # Deterministic: the same question gives the same answer, to the millisecond.
    assert against("http_retries", slower) == report
    assert report.reused == []
    assert report.would_run == ["call"]


def test_fewer_attempts_fail_where_the_log_retried() -> None:
    def stingy(raw: dict[str, Any]) -> None:
        raw["retry_policy"]["max_attempts"] = 2

    report = against("http_retries", stingy)
    assert report.diverges_at == 10
    assert report.decisions[-1]["would_decide"]["type"] == "workflow_failed"
    assert report.decisions[-1]["recorded"]["type"] == "task_retry_scheduled"


def test_a_policy_that_still_allows_the_recorded_retries_does_not_diverge() -> None:
    def three(raw: dict[str, Any]) -> None:
        raw["retry_policy"]["max_attempts"] = 3

    assert against("http_retries", three).diverges_at is None


def test_another_input_diverges_at_the_first_decision_that_reads_it() -> None:
    report = against("signup", input={"user_id": 8})
    assert report.diverges_at == 2
    assert report.decisions[0]["would_decide"]["data"]["input"] == {"user": 8}
    assert report.decisions[0]["recorded"]["data"]["input"] == {"user": 7}
    assert report.reused == []


def test_the_report_is_plain_json() -> None:
    import json

    report = against("signup", lambda raw: node(raw, "vip").update(when="input.user_id"))
    assert json.loads(json.dumps(report.to_json())) == report.to_json()
