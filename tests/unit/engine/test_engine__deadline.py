"""A definition's timeout_seconds: the deadline's timer fires, decide times the execution
out (workflow_timed_out), cancels what may still run, runs the saga and ends it failed
with a WorkflowTimeout."""

from __future__ import annotations

from executions.engine.events import EventType, Source
from executions.engine.statuses import ExecutionStatus, TaskStatus
from executions.engine.verify import verify
from executions.engine.why import Rows, why, why_node
from tests.unit.engine.sim import T0, Run
from workflows.dsl.parser import parse_definition

UNDO = {"type": "function", "function": "std.echo"}
DEADLINE = T0.isoformat()


def started(**top: object) -> Run:
    definition = parse_definition(
        {
            "timeout_seconds": 60,
            **top,
            "nodes": [
                {"id": "a", "type": "function", "function": "std.echo", "compensation": UNDO},
                {"id": "slow", "type": "function", "function": "std.sleep", "depends_on": ["a"]},
                {"id": "after", "type": "function", "function": "std.echo", "depends_on": ["slow"]},
            ],
        }
    )
    run = Run(definition)
    run.append(
        EventType.WORKFLOW_STARTED,
        data={"input": {}, "deadline_at": DEADLINE},
        source=Source.API,
    )
    run.advance()
    run.append(EventType.TASK_STARTED, "a", 1)
    run.append(EventType.TASK_COMPLETED, "a", 1, {"output": "a"})
    run.advance()
    run.append(EventType.TASK_STARTED, "slow", 1)
    return run


def deadline_fires(run: Run) -> None:
    run.append(
        EventType.TIMER_FIRED, data={"kind": "deadline", "due_at": DEADLINE}, source=Source.TIMER
    )
    run.advance()


def types(run: Run) -> list[str]:
    return [event.type for event in run.log]


def test_the_deadline_cancels_running_nodes_compensates_and_fails_the_execution() -> None:
    run = started()
    deadline_fires(run)
    tail = types(run)[-6:]
    assert tail == [
        EventType.TIMER_FIRED,
        EventType.WORKFLOW_TIMED_OUT,
        EventType.TASK_CANCELLED,
        EventType.TASK_CANCELLED,
        EventType.COMPENSATION_SCHEDULED,
        EventType.TASK_SCHEDULED,
    ]
    assert run.state.nodes["slow"].status == TaskStatus.CANCELLED
    run.append(EventType.TASK_STARTED, "a.compensation", 1)
    run.append(EventType.TASK_COMPLETED, "a.compensation", 1, {"output": None})
    run.advance()
    assert run.state.status == ExecutionStatus.FAILED
    error = run.state.error or {}
    assert error["type"] == "WorkflowTimeout"
    assert error["deadline_at"] == DEADLINE
    assert error["timeout_seconds"] == 60
    assert error["cancelled"] == ["slow", "after"]  # running, and not started
    assert error["compensations"] == {"a": TaskStatus.SUCCEEDED}
    assert verify(run.definition, run.log, execution_id=run.execution_id) is None


def test_why_names_the_deadline() -> None:
    run = started()
    deadline_fires(run)
    entries = why(run.definition, run.state, Rows())
    codes = {r["code"] for entry in entries for r in entry["reasons"]}
    assert "workflow_timeout" in codes

    slow = why_node(run.definition, run.state, Rows(), "slow")
    assert slow["reasons"][0]["code"] == "workflow_timeout"
    assert slow["reasons"][0]["deadline_at"] == DEADLINE


def test_a_deadline_after_the_end_changes_nothing() -> None:
    run = started()
    run.append(EventType.TASK_COMPLETED, "slow", 1, {"output": 1})
    run.advance()
    run.append(EventType.TASK_STARTED, "after", 1)
    run.append(EventType.TASK_COMPLETED, "after", 1, {"output": 2})
    run.advance()
    assert run.state.status == ExecutionStatus.SUCCEEDED
    deadline_fires(run)
    assert run.state.status == ExecutionStatus.SUCCEEDED
    assert EventType.WORKFLOW_TIMED_OUT not in types(run)
    assert verify(run.definition, run.log, execution_id=run.execution_id) is None


def test_a_cancel_requested_first_wins() -> None:
    run = started()
    run.append(EventType.WORKFLOW_CANCEL_REQUESTED, data={"by": "t"}, source=Source.API)
    deadline_fires(run)
    assert run.state.status == ExecutionStatus.CANCELLED
    assert verify(run.definition, run.log, execution_id=run.execution_id) is None


def test_verify_finds_a_missing_timeout_decision() -> None:
    run = started()
    deadline_fires(run)
    forged = [e for e in run.log if e.type != EventType.WORKFLOW_TIMED_OUT]
    renumbered = [
        type(e).stored(i + 1, e.type, e.timestamp, e.node_id, e.attempt, e.data, e.source)
        for i, e in enumerate(forged)
    ]
    assert verify(run.definition, renumbered, execution_id=run.execution_id) is not None
