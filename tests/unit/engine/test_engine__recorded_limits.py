"""The bounds an execution recorded in workflow_started are the ones decide uses for it
from then on: a setting changed later changes nothing it decides, and its stored log
still verifies. A history recorded before the bounds were (none in its data) is decided
with the bounds in force, as it always was."""

from __future__ import annotations

from typing import Any

from executions.engine.decide import decide
from executions.engine.events import EventType
from executions.engine.fold import fold
from executions.engine.state import ExecutionState
from executions.engine.verify import verify
from tests.unit.engine.sim import Run
from workflows.dsl import parse_definition
from workflows.dsl.limits import DECISION_LIMITS, decision_limits, limits, overridden, recorded

#: A map without max_parallel: how many items run at once is WORKFLOW_MAP_DEFAULT_MAX_PARALLEL.
MAP = parse_definition(
    {
        "nodes": [
            {
                "id": "each",
                "type": "map",
                "items": "input.items",
                "node": {"type": "function", "function": "std.echo", "input": {"v": "{{ item }}"}},
            }
        ]
    }
)
INPUT = {"items": list(range(6))}


def started(bounds: dict[str, Any] | None) -> Run:
    """A run whose workflow_started recorded `bounds` (None: recorded nothing)."""
    run = Run(MAP)
    data: dict[str, Any] = {"input": INPUT}
    if bounds is not None:
        data["limits"] = bounds
    run.append(EventType.WORKFLOW_STARTED, data=data)
    run.advance()
    return run


def items_scheduled(run: Run) -> int:
    return sum(
        1
        for e in run.log
        if e.type == EventType.TASK_SCHEDULED and (e.node_id or "").startswith("each[")
    )


def test_what_is_recorded_is_every_bound_decide_reads() -> None:
    with overridden(map_default_max_parallel=3, max_step_work=12_345):
        bounds = decision_limits()
    assert set(bounds) == set(DECISION_LIMITS)
    assert bounds["map_default_max_parallel"] == 3
    assert bounds["max_step_work"] == 12_345


def test_fold_keeps_the_recorded_bounds_in_the_state_and_its_snapshot() -> None:
    run = started({**decision_limits(), "map_default_max_parallel": 2})
    state = fold(run.log, execution_id=run.execution_id)
    assert state.limits is not None
    assert state.limits["map_default_max_parallel"] == 2
    again = ExecutionState.from_dict(state.to_dict())
    assert again.limits == state.limits


def test_decide_uses_the_recorded_bounds_whatever_the_settings_say_now() -> None:
    with overridden(map_default_max_parallel=2):
        run = started(decision_limits())
    assert items_scheduled(run) == 2
    # The setting is raised afterwards: this execution still runs two at a time ...
    with overridden(map_default_max_parallel=5):
        assert decide(MAP, run.state) == []
        for _ in range(200):
            if not run.step():
                break
        # ... and its log verifies under the new setting.
        assert verify(MAP, run.log, execution_id=run.execution_id) is None
    assert run.state.status == "succeeded"
    # Never more than two items were running at once.
    running, most = 0, 0
    for event in run.log:
        if (event.node_id or "").startswith("each["):
            if event.type == EventType.TASK_SCHEDULED:
                running += 1
            elif event.type == EventType.TASK_COMPLETED:
                running -= 1
            most = max(most, running)
    assert most == 2


def test_a_history_without_recorded_bounds_is_decided_with_those_in_force() -> None:
    with overridden(map_default_max_parallel=2):
        run = started(None)
        assert items_scheduled(run) == 2
        assert verify(MAP, run.log, execution_id=run.execution_id) is None
    # This is what recording prevents: the same log under another setting disagrees.
    with overridden(map_default_max_parallel=5):
        assert verify(MAP, run.log, execution_id=run.execution_id) is not None


def test_recorded_bounds_apply_only_inside_the_block_and_ignore_what_is_not_a_bound() -> None:
    before = limits()
    values = {"map_default_max_parallel": 7, "no_such_bound": 1, "max_step_work": "lots"}
    with recorded(values) as inside:
        assert inside.map_default_max_parallel == 7
        assert inside.max_step_work == before.max_step_work
        assert limits() is inside
    assert limits() is before
    with recorded(None) as inside:
        assert inside is before
