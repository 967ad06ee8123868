"""workflow_paused / workflow_resumed: paused is folded state, and decide holds back all
new work while it is set; facts still fold; resume decides upon them where it stopped."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from executions.engine.decide import decide
from executions.engine.events import EventType, Source
from executions.engine.fold import fold
from executions.engine.state import ExecutionState
from executions.engine.statuses import EXECUTION_TERMINAL, ExecutionStatus, TaskStatus
from executions.engine.verify import verify
from tests.unit.engine.sim import Run
from tests.unit.engine.strategies import dags
from tests.unit.engine.test_engine__engine_error import FAN, started_fan


def pause(run: Run, by: str = "ops") -> None:
    run.append(EventType.WORKFLOW_PAUSED, data={"by": by}, source=Source.API)
    run.advance()


def resume(run: Run, by: str = "ops") -> None:
    run.append(EventType.WORKFLOW_RESUMED, data={"by": by}, source=Source.API)
    run.advance()


def test_a_result_while_paused_schedules_nothing_and_resume_goes_on() -> None:
    run = Run(FAN, seed=1)
    run.start({})
    run.append(EventType.TASK_STARTED, "a", 1)
    pause(run)
    assert run.state.status == ExecutionStatus.PAUSED
    assert run.state.paused
    run.append(EventType.TASK_COMPLETED, "a", 1, {"output": 1})
    assert decide(FAN, run.state) == []
    assert {n: s.status for n, s in run.state.nodes.items()} == {"a": TaskStatus.SUCCEEDED}
    resume(run)
    assert run.state.status == ExecutionStatus.RUNNING
    assert not run.state.paused
    assert run.state.node("b").status == TaskStatus.SCHEDULED
    assert run.state.node("wait").status == TaskStatus.WAITING
    assert verify(FAN, run.log, execution_id=run.execution_id) is None


def test_timers_and_failures_folded_while_paused_are_acted_on_at_resume() -> None:
    run = started_fan()
    pause(run)
    run.append(EventType.TIMER_FIRED, "wait", 1, {"kind": "delay"}, Source.TIMER)
    error = {"type": "Boom", "message": "x", "retryable": True}
    run.append(EventType.TASK_FAILED, "b", 1, {"error": error})
    assert decide(FAN, run.state) == []
    resume(run)
    assert run.state.node("wait").status == TaskStatus.SUCCEEDED
    assert run.state.node("b").status == TaskStatus.RETRYING
    assert verify(FAN, run.log, execution_id=run.execution_id) is None


def test_cancel_goes_through_a_pause_and_a_retry_runs_again() -> None:
    run = started_fan()
    pause(run)
    run.append(EventType.WORKFLOW_CANCEL_REQUESTED, data={"by": "ops"}, source=Source.API)
    run.advance()
    assert run.state.status == ExecutionStatus.CANCELLED
    assert not run.state.paused
    run.append(
        EventType.RETRY_REQUESTED, data={"nodes": ["b", "c", "wait", "end"]}, source=Source.API
    )
    run.advance()
    assert run.state.status == ExecutionStatus.RUNNING
    assert run.state.node("b").status == TaskStatus.SCHEDULED
    assert verify(FAN, run.log, execution_id=run.execution_id) is None


def test_pause_of_what_is_not_running_folds_to_nothing() -> None:
    state = ExecutionState("x")
    run = Run(FAN)
    run.state = state
    run.append(EventType.WORKFLOW_PAUSED, data={}, source=Source.API)
    assert state.status == ExecutionStatus.PENDING
    assert not state.paused
    run.append(EventType.WORKFLOW_RESUMED, data={}, source=Source.API)
    assert state.status == ExecutionStatus.PENDING


def test_snapshots_keep_the_flag_and_old_snapshots_read_unpaused() -> None:
    run = started_fan()
    pause(run)
    assert ExecutionState.from_dict(run.state.to_dict()) == run.state
    old = run.state.to_dict()
    del old["paused"]
    assert ExecutionState.from_dict(old).paused is False


@settings(max_examples=150, deadline=None)
@given(st.tuples(dags(), st.integers(0, 2**32), st.integers(0, 30), st.integers(0, 30)))
def test_a_pause_anywhere_decides_nothing_until_resumed_and_verifies(case) -> None:
    (definition, plan), seed, pause_at, paused_for = case
    run = Run(definition, plan=plan, seed=seed)
    run.start({"flag": True, "items": [1, 2, 3][: seed % 4]})
    for _ in range(pause_at):
        if run.state.status in EXECUTION_TERMINAL or not run.step():
            break
    if run.state.status == ExecutionStatus.RUNNING:
        pause(run)
        for _ in range(paused_for):
            before = len(run.log)
            if not run.step():
                break
            engine = [e for e in run.log[before:] if e.source == Source.ENGINE]
            assert engine == [], engine
        resume(run)
    for _ in range(2000):
        if run.state.status in EXECUTION_TERMINAL or not run.step():
            break
    assert run.state.status in EXECUTION_TERMINAL, run.log
    assert verify(definition, run.log, execution_id=run.execution_id) is None
    assert fold(run.log, execution_id=run.execution_id) == run.state


def test_a_cancel_during_a_retry_backoff_cancels_the_next_attempt() -> None:
    """The backed-off attempt already has its result (the failure): the cancel is the
    next attempt's, or the log would hold two results for one attempt."""
    run = started_fan()
    error = {"type": "Boom", "message": "x", "retryable": True}
    run.append(EventType.TASK_FAILED, "b", 1, {"error": error})
    run.advance()
    assert run.state.node("b").status == TaskStatus.RETRYING
    run.append(EventType.WORKFLOW_CANCEL_REQUESTED, data={}, source=Source.API)
    run.advance()
    cancels = [e for e in run.log if e.type == EventType.TASK_CANCELLED and e.node_id == "b"]
    assert [e.attempt for e in cancels] == [2]
    assert run.state.status == ExecutionStatus.CANCELLED
    assert verify(FAN, run.log, execution_id=run.execution_id) is None
