"""verify() re-derives every decision, and names the first divergence in an altered log."""

from __future__ import annotations

from dataclasses import replace

from executions.engine.events import EventType, Source
from executions.engine.verify import verify
from tests.unit.engine.sim import Run
from workflows.dsl import Definition, Node, RetryPolicy
from workflows.kinds.delay import DelaySpec
from workflows.kinds.function import FunctionSpec

ECHO = FunctionSpec("std.echo")

DEFINITION = Definition(
    nodes=(
        Node(id="a", type="function", spec=ECHO, input={"x": "{{ input.x }}"}),
        Node(
            id="b",
            type="function",
            spec=ECHO,
            depends_on=("a",),
            retry_policy=RetryPolicy(max_attempts=3, initial_interval_seconds=1.0),
        ),
        Node(id="wait", type="delay", spec=DelaySpec(seconds=5), depends_on=("a",)),
        Node(id="c", type="function", spec=ECHO, depends_on=("b", "wait")),
    )
)


def golden() -> Run:
    run = Run(DEFINITION, plan={"b": ["fail", "fail", "ok"]}, seed=7)
    run.run_to_end({"x": 1})
    return run


def test_a_faithful_log_verifies() -> None:
    run = golden()
    assert run.state.status == "succeeded"
    assert verify(DEFINITION, run.log, execution_id=run.execution_id) is None


def test_an_altered_retry_delay_is_the_reported_divergence() -> None:
    run = golden()
    log = list(run.log)
    index = next(i for i, e in enumerate(log) if e.type == EventType.TASK_RETRY_SCHEDULED)
    log[index] = replace(log[index], data={**log[index].data, "delay_seconds": 0.001})
    found = verify(DEFINITION, log, execution_id=run.execution_id)
    assert found is not None
    assert found.seq == log[index].seq
    assert found.expected.data["delay_seconds"] == run.log[index].data["delay_seconds"]
    assert "divergence at seq" in str(found)
    assert "delay_seconds" in str(found)


def test_jitter_depends_on_the_execution_id() -> None:
    """Verifying under another execution id changes the jitter, so it must diverge."""
    run = golden()
    found = verify(DEFINITION, run.log, execution_id="someone-else")
    assert found is not None
    assert found.recorded.type == EventType.TASK_RETRY_SCHEDULED


def test_a_missing_or_extra_decision_is_a_divergence() -> None:
    run = golden()
    decided = [i for i, e in enumerate(run.log) if e.source == Source.ENGINE]
    dropped = [e for i, e in enumerate(run.log) if i != decided[-1]]
    assert verify(DEFINITION, dropped, execution_id=run.execution_id) is not None
    extra = replace(run.log[decided[1]], seq=run.log[-1].seq + 1)
    assert verify(DEFINITION, [*run.log, extra], execution_id=run.execution_id) is not None
