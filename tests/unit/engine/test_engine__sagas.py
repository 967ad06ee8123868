"""compensate_on_cancel and the nodes a retry must redo (engine/compensation.py)."""

from __future__ import annotations

from executions.engine import compensation
from executions.engine.events import EventType, Source
from tests.unit.engine.sim import Run
from workflows.dsl.parser import parse_definition

UNDO = {"type": "function", "function": "std.echo"}


def saga(on_cancel: bool) -> Run:
    definition = parse_definition(
        {
            "compensate_on_cancel": on_cancel,
            "nodes": [
                {"id": "a", "type": "function", "function": "std.echo", "compensation": UNDO},
                {"id": "b", "type": "function", "function": "std.echo", "compensation": UNDO},
                {"id": "c", "type": "approval", "depends_on": ["a", "b"]},
            ],
        }
    )
    run = Run(definition)
    run.start()
    for node_id in ("b", "a"):  # b completes first: a is undone first
        run.append(EventType.TASK_STARTED, node_id, 1)
        run.append(EventType.TASK_COMPLETED, node_id, 1, {"output": node_id})
        run.advance()
    run.append(EventType.WORKFLOW_CANCEL_REQUESTED, data={"by": "t"}, source=Source.API)
    run.advance()
    return run


def finish(run: Run, task: str) -> None:
    run.append(EventType.TASK_STARTED, task, 1)
    run.append(EventType.TASK_COMPLETED, task, 1, {"output": None})
    run.advance()


def test_without_the_option_a_cancel_undoes_nothing() -> None:
    run = saga(on_cancel=False)
    assert run.state.status == "cancelled"
    assert compensation.undone(run.definition, run.state) == []


def test_with_it_a_cancel_undoes_latest_first_one_at_a_time_then_ends_cancelled() -> None:
    run = saga(on_cancel=True)
    assert run.state.status == "cancelling"
    assert run.state.node("c").status == "cancelled"
    assert run.state.node("a.compensation").status == "scheduled"
    assert "b.compensation" not in run.state.nodes
    finish(run, "a.compensation")
    assert run.state.node("b.compensation").status == "scheduled"
    finish(run, "b.compensation")
    assert run.state.status == "cancelled"
    assert run.log[-1].data == {"reason": "cancel requested; compensated"}
    assert compensation.undone(run.definition, run.state) == ["a", "b"]


def test_a_failed_compensation_is_retried_by_its_policy_during_the_cancel() -> None:
    run = saga(on_cancel=True)
    run.append(EventType.TASK_STARTED, "a.compensation", 1)
    error = {"type": "Boom", "message": "x", "retryable": True}
    run.append(EventType.TASK_FAILED, "a.compensation", 1, {"error": error})
    run.advance()
    assert run.state.node("a.compensation").status == "retrying"
    run.append(EventType.TIMER_FIRED, "a.compensation", 2, {"kind": "retry"}, Source.TIMER)
    run.advance()
    assert run.state.node("a.compensation").status == "scheduled"
    assert run.state.status == "cancelling"
