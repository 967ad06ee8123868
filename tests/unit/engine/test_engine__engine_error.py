"""engine_error: the fact a fault boundary records, and how fold and decide end with it."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from executions.engine.containment import MESSAGE_LIMIT, engine_error_data
from executions.engine.decide import decide
from executions.engine.events import EventType, Source
from executions.engine.fold import fold
from executions.engine.state import ExecutionState
from executions.engine.statuses import TASK_ACTIVE, ExecutionStatus, TaskStatus
from executions.engine.verify import verify
from tests.unit.engine.sim import Run
from tests.unit.engine.strategies import dags
from workflows.dsl import Definition, Node
from workflows.kinds.delay import DelaySpec
from workflows.kinds.function import FunctionSpec

ERROR = {"type": "EngineError", "message": "ValueError: broken", "where": "sweeper: advance"}

ECHO = FunctionSpec("std.echo")

FAN = Definition(
    nodes=(
        Node(id="a", type="function", spec=ECHO),
        Node(id="wait", type="delay", spec=DelaySpec(seconds=60), depends_on=("a",)),
        Node(id="b", type="function", spec=ECHO, depends_on=("a",)),
        Node(id="c", type="function", spec=ECHO, depends_on=("a",)),
        Node(id="end", type="function", spec=ECHO, depends_on=("wait", "b", "c")),
    ),
    output="{{ nodes.end.output }}",
)


class Unreadable:
    """A definition that raises on any use: what a corrupted version row amounts to."""

    def __getattr__(self, name: str):
        raise AssertionError(f"decide read definition.{name} while ending an engine error")


def started_fan() -> Run:
    run = Run(FAN, seed=3)
    run.start({})
    run.append(EventType.TASK_STARTED, "a", 1)
    run.append(EventType.TASK_COMPLETED, "a", 1, {"output": 1})
    run.advance()
    run.append(EventType.TASK_STARTED, "b", 1)
    return run


def test_engine_error_cancels_active_nodes_and_fails_with_the_error() -> None:
    run = started_fan()
    active = sorted(n for n, s in run.state.nodes.items() if s.status in TASK_ACTIVE)
    assert active == ["b", "c", "wait"]
    run.append(EventType.ENGINE_ERROR, data={"error": ERROR}, source=Source.SWEEPER)
    assert run.state.engine_error == ERROR
    decisions = decide(FAN, run.state)
    assert [(d.type, d.node_id) for d in decisions] == [
        (EventType.TASK_CANCELLED, "b"),
        (EventType.TASK_CANCELLED, "c"),
        (EventType.TASK_CANCELLED, "wait"),
        (EventType.WORKFLOW_FAILED, None),
    ]
    assert decisions[-1].data == {"error": ERROR}
    run.advance()
    assert run.state.status == ExecutionStatus.FAILED
    assert run.state.error == ERROR
    assert {run.state.nodes[n].status for n in active} == {TaskStatus.CANCELLED}
    assert run.state.nodes.get("end") is None  # never started, never touched
    assert decide(FAN, run.state) == []
    assert verify(FAN, run.log, execution_id=run.execution_id) is None


def test_ending_reads_neither_the_definition_nor_a_template() -> None:
    run = started_fan()
    run.append(EventType.ENGINE_ERROR, data={"error": ERROR}, source=Source.WORKER)
    decisions = decide(Unreadable(), run.state)  # type: ignore[arg-type]
    assert decisions[-1].type == EventType.WORKFLOW_FAILED


def test_an_engine_error_before_the_start_fails_the_pending_execution() -> None:
    run = Run(FAN)
    run.append(EventType.ENGINE_ERROR, data={"error": ERROR}, source=Source.API)
    run.advance()
    assert [e.type for e in run.log] == [EventType.ENGINE_ERROR, EventType.WORKFLOW_FAILED]
    assert run.state.status == ExecutionStatus.FAILED
    assert verify(FAN, run.log, execution_id=run.execution_id) is None


def test_an_engine_error_after_the_end_changes_nothing() -> None:
    run = Run(FAN, seed=1)
    run.run_to_end({})
    assert run.state.status == ExecutionStatus.SUCCEEDED
    run.append(EventType.ENGINE_ERROR, data={"error": ERROR}, source=Source.SWEEPER)
    assert run.state.engine_error is None
    assert run.state.status == ExecutionStatus.SUCCEEDED
    assert decide(FAN, run.state) == []
    assert verify(FAN, run.log, execution_id=run.execution_id) is None


def test_the_first_engine_error_is_the_one_reported() -> None:
    run = started_fan()
    run.append(EventType.ENGINE_ERROR, data={"error": ERROR}, source=Source.WORKER)
    run.append(EventType.ENGINE_ERROR, data={"error": {**ERROR, "message": "second"}})
    run.advance()
    assert run.state.error == ERROR


def test_an_operator_retry_clears_the_engine_error() -> None:
    run = started_fan()
    run.append(EventType.ENGINE_ERROR, data={"error": ERROR}, source=Source.WORKER)
    run.advance()
    failed = sorted(n for n, s in run.state.nodes.items() if s.status == TaskStatus.CANCELLED)
    run.append(EventType.RETRY_REQUESTED, data={"nodes": failed}, source=Source.API)
    assert run.state.engine_error is None
    run.advance()
    assert run.state.status == ExecutionStatus.RUNNING
    assert run.state.nodes["b"].status == TaskStatus.SCHEDULED
    assert verify(FAN, run.log, execution_id=run.execution_id) is None


def test_the_engine_error_survives_a_snapshot() -> None:
    run = started_fan()
    run.append(EventType.ENGINE_ERROR, data={"error": ERROR}, source=Source.WORKER)
    raw = json.loads(json.dumps(run.state.to_dict()))
    restored = ExecutionState.from_dict(raw)
    assert restored.engine_error == ERROR
    assert decide(FAN, restored) == decide(FAN, run.state)


def test_the_recorded_error_names_what_broke_and_is_storable() -> None:
    data = engine_error_data(OverflowError("int too large"), "sweeper: advance")
    assert data == {
        "error": {
            "type": "EngineError",
            "message": "OverflowError: int too large",
            "where": "sweeper: advance",
        }
    }
    long = engine_error_data(ValueError("x" * 10 * MESSAGE_LIMIT), "worker")
    assert len(long["error"]["message"]) < MESSAGE_LIMIT + 20
    assert long["error"]["message"].endswith("(truncated)")
    odd = engine_error_data(ValueError("nul \x00 and \ud800"), "worker")["error"]["message"]
    assert "\x00" not in odd
    odd.encode("utf-8")  # no lone surrogate left: PostgreSQL would refuse it


@settings(max_examples=200, deadline=None)
@given(dags(), st.integers(0, 2**32), st.integers(0, 60))
def test_an_engine_error_at_any_point_ends_the_execution_and_verifies(case, seed, at) -> None:
    definition, plan = case
    run = Run(definition, plan=plan, seed=seed)
    run.start({"flag": True, "items": [1, 2]})
    for _ in range(at):
        if run.state.status in {"succeeded", "failed", "cancelled"} or not run.step():
            break
    was_ended = run.state.status in {"succeeded", "failed", "cancelled"}
    before = run.state.status
    run.append(EventType.ENGINE_ERROR, data={"error": ERROR}, source=Source.SWEEPER)
    run.advance()
    if was_ended:
        assert run.state.status == before
    else:
        assert run.state.status == ExecutionStatus.FAILED
        assert run.state.error == ERROR
        assert not [n for n, s in run.state.nodes.items() if s.status in TASK_ACTIVE]
    assert decide(definition, run.state) == []
    assert verify(definition, run.log, execution_id=run.execution_id) is None
    assert fold(run.log, execution_id=run.execution_id).status == run.state.status
