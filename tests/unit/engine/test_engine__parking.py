"""retry_policy.on_exhausted "park": a node out of attempts waits, parked, for an operator's
retry (task_unparked "retry": another round) or fail (task_unparked "fail": it fails for
good, as it would have without parking). Every step replays."""

from __future__ import annotations

import pytest

from executions.engine.decide import decide
from executions.engine.events import EventType, Source
from executions.engine.state import ExecutionState
from executions.engine.statuses import ExecutionStatus, TaskStatus
from executions.engine.verify import verify
from executions.engine.why import Rows, why
from tests.unit.engine.sim import Run
from workflows.dsl import DefinitionError
from workflows.dsl.parser import parse_definition

UNDO = {"type": "function", "function": "std.echo"}
ERROR = {"type": "Boom", "message": "down", "retryable": True}


def definition(on_exhausted: str = "park", max_attempts: int = 2) -> object:
    return parse_definition(
        {
            "retry_policy": {
                "max_attempts": max_attempts,
                "initial_interval_seconds": 1,
                "on_exhausted": on_exhausted,
            },
            "nodes": [
                {"id": "a", "type": "function", "function": "std.echo", "compensation": UNDO},
                {"id": "b", "type": "function", "function": "std.echo", "depends_on": ["a"]},
                {"id": "c", "type": "function", "function": "std.echo", "depends_on": ["b"]},
            ],
        }
    )


def ok(run: Run, node: str, attempt: int = 1) -> None:
    run.append(EventType.TASK_STARTED, node, attempt)
    run.append(EventType.TASK_COMPLETED, node, attempt, {"output": node})
    run.advance()


def fail(run: Run, node: str, attempt: int, error: dict | None = None) -> None:
    run.append(EventType.TASK_STARTED, node, attempt)
    run.append(EventType.TASK_FAILED, node, attempt, {"error": error or ERROR})
    run.advance()


def fire_retry(run: Run, node: str, attempt: int) -> None:
    run.append(EventType.TIMER_FIRED, node, attempt, {"kind": "retry"}, Source.TIMER)
    run.advance()


def unpark(run: Run, node: str, action: str) -> None:
    run.append(EventType.TASK_UNPARKED, node, run.state.node(node).attempt,
               {"action": action, "by": "ops"}, Source.API)  # fmt: skip
    run.advance()


def parked_run(on_exhausted: str = "park") -> Run:
    run = Run(definition(on_exhausted))  # type: ignore[arg-type]
    run.start({})
    ok(run, "a")
    fail(run, "b", 1)
    fire_retry(run, "b", 2)
    fail(run, "b", 2)
    return run


def types(run: Run) -> list[str]:
    return [event.type for event in run.log]


def test_out_of_attempts_the_node_parks_and_the_execution_keeps_running() -> None:
    run = parked_run()
    assert run.log[-1].type == EventType.TASK_PARKED
    assert run.log[-1].data == {"attempts": 2, "error_type": "Boom"}
    node = run.state.node("b")
    assert node.status == TaskStatus.PARKED
    assert node.error == ERROR
    assert run.state.status == ExecutionStatus.RUNNING
    assert run.state.node("c").status == TaskStatus.PENDING
    assert decide(run.definition, run.state) == []
    [entry] = [e for e in why(run.definition, run.state, Rows()) if e["node_id"] == "b"]
    assert entry["status"] == "parked"
    assert [r["code"] for r in entry["reasons"]] == ["parked"]
    assert verify(run.definition, run.log, execution_id=run.execution_id) is None


def test_default_policy_fails_as_before() -> None:
    run = parked_run(on_exhausted="fail")
    assert EventType.TASK_PARKED not in types(run)
    assert run.state.status == ExecutionStatus.RUNNING  # the compensation of a runs first
    assert run.state.node("a.compensation").status == TaskStatus.SCHEDULED
    ok(run, "a.compensation")
    assert run.state.status == ExecutionStatus.FAILED


def test_retry_runs_another_round_at_once_and_can_succeed() -> None:
    run = parked_run()
    unpark(run, "b", "retry")
    node = run.state.node("b")
    assert node.status == TaskStatus.SCHEDULED
    assert node.attempt == 3
    assert node.tries == 1  # the first of a new round of max_attempts
    assert run.log[-1].type == EventType.TASK_SCHEDULED
    assert run.log[-1].data.get("retry") is True
    # A whole new round: attempt 3 may fail once more before it parks again.
    fail(run, "b", 3)
    assert run.state.node("b").status == TaskStatus.RETRYING
    fire_retry(run, "b", 4)
    ok(run, "b", 4)
    ok(run, "c")
    assert run.state.status == ExecutionStatus.SUCCEEDED
    assert verify(run.definition, run.log, execution_id=run.execution_id) is None


def test_a_round_that_runs_out_again_parks_again() -> None:
    run = parked_run()
    unpark(run, "b", "retry")
    fail(run, "b", 3)
    fire_retry(run, "b", 4)
    fail(run, "b", 4)
    assert run.state.node("b").status == TaskStatus.PARKED
    assert types(run).count(EventType.TASK_PARKED) == 2
    assert verify(run.definition, run.log, execution_id=run.execution_id) is None


def test_fail_fails_the_execution_as_it_would_have_and_compensations_run() -> None:
    run = parked_run()
    unpark(run, "b", "fail")
    assert run.state.node("b").status == TaskStatus.FAILED
    assert run.state.node("c").status == TaskStatus.SKIPPED
    assert run.state.node("a.compensation").status == TaskStatus.SCHEDULED
    ok(run, "a.compensation")
    assert run.state.status == ExecutionStatus.FAILED
    assert run.state.error is not None
    assert run.state.error["nodes"] == ["b"]
    assert run.state.error["cause"] == ERROR
    assert verify(run.definition, run.log, execution_id=run.execution_id) is None


def test_a_non_retryable_error_fails_at_once_even_under_park() -> None:
    run = Run(definition())  # type: ignore[arg-type]
    run.start({})
    ok(run, "a")
    fail(run, "b", 1, {"type": "Bad", "message": "no", "retryable": False})
    assert EventType.TASK_PARKED not in types(run)
    assert run.state.node("c").status == TaskStatus.SKIPPED


def test_a_cancel_cancels_a_parked_node() -> None:
    run = parked_run()
    run.append(EventType.WORKFLOW_CANCEL_REQUESTED, data={"by": "t"}, source=Source.API)
    run.advance()
    assert run.state.node("b").status == TaskStatus.CANCELLED
    assert run.state.status == ExecutionStatus.CANCELLED
    assert verify(run.definition, run.log, execution_id=run.execution_id) is None


def test_an_answer_to_a_node_not_parked_changes_nothing() -> None:
    run = Run(definition())  # type: ignore[arg-type]
    run.start({})
    before = run.state.node("a").status
    unpark(run, "a", "fail")
    assert run.state.node("a").status == before


def test_the_state_round_trips_through_a_snapshot() -> None:
    run = parked_run()
    unpark(run, "b", "fail")
    again = ExecutionState.from_dict(run.state.to_dict())
    assert again.node("b").given_up
    assert decide(run.definition, again) == decide(run.definition, run.state)


@pytest.mark.parametrize("value", ["retry", True, None, "PARK"])
def test_on_exhausted_takes_fail_or_park_only(value: object) -> None:
    with pytest.raises(DefinitionError) as caught:
        parse_definition(
            {
                "nodes": [
                    {
                        "id": "a",
                        "type": "function",
                        "function": "std.echo",
                        "retry_policy": {"on_exhausted": value},
                    }
                ]
            }
        )
    assert "retry_policy.on_exhausted" in str(caught.value)
    assert '"fail" or "park"' in str(caught.value)
