"""Waiting nodes in the pure core: approval timeouts and named signals (engine/waits.py)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from executions.engine.events import EventType, Source
from executions.engine.state import ExecutionState
from executions.engine.statuses import TaskStatus
from executions.engine.verify import verify
from tests.unit.engine.sim import Run
from workflows.dsl import DefinitionError
from workflows.dsl.parser import parse_definition


def run_of(*nodes: dict[str, Any]) -> Run:
    run = Run(parse_definition({"nodes": list(nodes)}))
    run.start()
    return run


def fire_timeout(run: Run, node_id: str) -> None:
    attempt = run.state.node(node_id).attempt
    run.append(EventType.TIMER_FIRED, node_id, attempt, {"kind": "timeout"}, Source.TIMER)
    run.advance()


def signal(run: Run, name: str, data: Any) -> None:
    run.append(EventType.SIGNAL_RECEIVED, None, None, {"name": name, "data": data}, Source.API)
    run.advance()


def types(run: Run, node_id: str) -> list[str]:
    return [e.type.value for e in run.log if e.node_id == node_id]


def assert_verified(run: Run) -> None:
    assert verify(run.definition, run.log, execution_id=run.execution_id) is None


APPROVAL = {"id": "ok", "type": "approval", "timeout_seconds": 60}


def test_an_approval_with_a_timeout_schedules_its_deadline() -> None:
    run = run_of(APPROVAL)
    (scheduled,) = [e for e in run.log if e.type == EventType.TASK_SCHEDULED]
    # decide's now is the last event's timestamp (workflow_started's).
    due = run.log[0].timestamp + timedelta(seconds=60)
    assert scheduled.data["timeout_at"] == due.isoformat()
    assert "timeout_at" not in run_of({"id": "ok", "type": "approval"}).log[1].data


@pytest.mark.parametrize(
    ("on_timeout", "status", "result"),
    [
        (None, "failed", "task_failed"),
        ("reject", "failed", "task_failed"),
        ("approve", "succeeded", "task_completed"),
        ("fail", "failed", "task_timed_out"),
    ],
)
def test_an_unanswered_approval_does_what_on_timeout_says(
    on_timeout: str | None, status: str, result: str
) -> None:
    node: dict[str, Any] = {**APPROVAL, "retry_policy": {"max_attempts": 1}}
    if on_timeout:
        node["on_timeout"] = on_timeout
    run = run_of(node)
    fire_timeout(run, "ok")
    assert types(run, "ok")[-2:] == ["approval_timed_out", result]
    assert run.log[-3].data == {"on_timeout": on_timeout or "reject", "timeout_seconds": 60.0}
    assert run.state.status == status
    assert_verified(run)


def test_on_timeout_fail_is_retried_by_the_policy_and_waits_again() -> None:
    node = {**APPROVAL, "on_timeout": "fail", "retry_policy": {"max_attempts": 2}}
    run = run_of(node)
    fire_timeout(run, "ok")
    assert run.state.node("ok").status == TaskStatus.RETRYING
    run.append(EventType.TIMER_FIRED, "ok", 2, {"kind": "retry"}, Source.TIMER)
    run.advance()
    again = run.state.node("ok")
    assert (again.status, again.attempt, again.timer_fired) == (TaskStatus.WAITING, 2, False)
    assert run.log[-1].data["timeout_at"]  # a retried wait is bounded too
    run.append(EventType.SIGNAL_RECEIVED, "ok", 2, {"decision": "approve"}, Source.API)
    run.advance()
    assert run.state.status == "succeeded"
    assert_verified(run)


def test_an_answer_before_the_timeout_wins_and_a_late_timer_changes_nothing() -> None:
    run = run_of(APPROVAL, {"id": "after", "type": "delay", "seconds": 5, "depends_on": ["ok"]})
    run.append(EventType.SIGNAL_RECEIVED, "ok", 1, {"decision": "approve"}, Source.API)
    run.advance()
    fire_timeout(run, "ok")
    assert "approval_timed_out" not in types(run, "ok")
    assert run.state.node("ok").status == TaskStatus.SUCCEEDED
    assert_verified(run)


SIGNAL = {"id": "paid", "type": "signal", "signal": "payment"}


def test_a_signal_node_outputs_the_data_sent_to_it() -> None:
    run = run_of(SIGNAL)
    assert run.state.node("paid").status == TaskStatus.WAITING
    signal(run, "payment", {"amount": 3})
    assert run.state.node("paid").output == {"amount": 3}
    assert run.state.status == "succeeded"
    assert types(run, "paid") == ["task_scheduled", "signal_received", "task_completed"]
    assert run.state.signals == {}
    assert_verified(run)


def test_a_signal_sent_before_the_node_waits_is_kept_and_consumed_in_order() -> None:
    gate = {"id": "gate", "type": "approval"}
    first = {**SIGNAL, "depends_on": ["gate"]}
    second = {"id": "paid_again", "type": "signal", "signal": "payment", "depends_on": ["paid"]}
    run = run_of(gate, first, second)
    signal(run, "payment", 1)
    signal(run, "payment", 2)
    signal(run, "other", "x")  # kept, never consumed
    assert [s["data"] for s in run.state.signals["payment"]] == [1, 2]
    run.append(EventType.SIGNAL_RECEIVED, "gate", 1, {"decision": "approve"}, Source.API)
    run.advance()
    assert run.state.node("paid").output == 1
    assert run.state.node("paid_again").output == 2
    assert run.state.status == "succeeded"
    assert list(run.state.signals) == ["other"]
    # Kept signals survive a snapshot.
    assert ExecutionState.from_dict(run.state.to_dict()).signals == run.state.signals
    assert_verified(run)


def test_nodes_waiting_for_one_name_at_once_get_one_kept_signal_each() -> None:
    gate = {"id": "gate", "type": "approval"}
    waiters = [
        {"id": f"w{i}", "type": "signal", "signal": "payment", "depends_on": ["gate"]}
        for i in range(3)
    ]
    run = run_of(gate, *waiters)
    for data in (1, 2):
        signal(run, "payment", data)
    run.append(EventType.SIGNAL_RECEIVED, "gate", 1, {"decision": "approve"}, Source.API)
    run.advance()
    # Two signals, three waiters: the first two take one each, oldest first; one waits on.
    assert [run.state.node(f"w{i}").output for i in range(3)] == [1, 2, None]
    assert run.state.node("w2").status == TaskStatus.WAITING
    assert run.state.signals == {}
    signal(run, "payment", 3)
    assert run.state.node("w2").output == 3
    assert run.state.status == "succeeded"
    assert_verified(run)


def test_a_signal_node_times_out_as_a_timed_out_attempt() -> None:
    run = run_of({**SIGNAL, "timeout_seconds": 30, "retry_policy": {"max_attempts": 1}})
    fire_timeout(run, "paid")
    (timed_out,) = [e for e in run.log if e.type == EventType.TASK_TIMED_OUT]
    assert timed_out.data["error"]["message"] == "no signal 'payment' within 30 seconds"
    assert run.state.status == "failed"
    assert_verified(run)


@pytest.mark.parametrize(
    ("node", "field"),
    [
        ({"id": "s", "type": "signal"}, "signal"),
        ({"id": "s", "type": "signal", "signal": "a/b"}, "signal"),
        ({"id": "a", "type": "approval", "on_timeout": "shrug"}, "on_timeout"),
    ],
)
def test_bad_wait_fields_are_refused_with_node_and_field(node: dict[str, Any], field: str) -> None:
    with pytest.raises(DefinitionError) as raised:
        parse_definition({"nodes": [node]})
    assert [(p.node, p.field) for p in raised.value.problems] == [(node["id"], field)]
