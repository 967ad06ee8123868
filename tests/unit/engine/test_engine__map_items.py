"""What fold keeps beside the node states so decide need not rebuild it from every node on
every call: ExecutionState.maps (decide looks only at the map items that can change) is
what the node states give at every step, and decide through it decides exactly what the
pass over every item decides; ExecutionState.seen (the template context's nodes) is what
the node states give, in their order."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from executions.engine.context import template_context
from executions.engine.decide import decide
from executions.engine.events import EventType, Source
from executions.engine.state import ExecutionState, MapItems, map_items
from tests.unit.engine.sim import Run
from tests.unit.engine.strategies import dags
from workflows.dsl.parser import parse_definition


def decide_by_scanning(definition, state: ExecutionState) -> list:
    """The reference: an index whose bound says nothing sends every map the scanning way."""
    scanning = copy.deepcopy(state)
    scanning.maps = {
        map_id: MapItems(set(items.live), items.done, 10**9) for map_id, items in state.maps.items()
    }
    for map_id in definition.map_ids:
        scanning.maps.setdefault(map_id, MapItems(bound=10**9))
    return decide(definition, scanning)


def check(definition, state: ExecutionState) -> None:
    nodes = template_context(state)["nodes"]
    assert list(nodes.items()) == [
        (node_id, {"output": node.output, "status": node.status})
        for node_id, node in state.nodes.items()
    ]
    rebuilt = map_items(state.nodes)
    assert set(state.maps) >= set(rebuilt)
    for map_id, items in state.maps.items():
        expected = rebuilt.get(map_id, MapItems())
        assert (items.live, items.done) == (expected.live, expected.done), map_id
        assert items.bound >= expected.bound, map_id
    assert decide(definition, state) == decide_by_scanning(definition, state)


@settings(max_examples=150, deadline=None)
@given(dags(), st.integers(0, 2**32), st.booleans(), st.integers(0, 40))
def test_the_map_index_is_the_node_states_and_decides_as_the_scan(case, seed, flag, cancel_at):
    definition, plan = case
    run = Run(definition, plan=plan, seed=seed)
    original = run.advance
    steps = [0]

    def checked() -> None:
        check(definition, run.state)
        steps[0] += 1
        if steps[0] == cancel_at and run.state.status == "running":
            run.append(EventType.WORKFLOW_CANCEL_REQUESTED, source=Source.API)
        original()

    run.advance = checked  # type: ignore[method-assign]  # a check wrapped around each step
    state = run.run_to_end({"flag": flag, "items": [1, 2, 3, 4, 5]})
    check(definition, state)
    # A snapshot's state rebuilds the same index.
    assert map_items(ExecutionState.from_dict(state.to_dict()).nodes) == map_items(state.nodes)
    restored = ExecutionState.from_dict(state.to_dict())
    assert list(restored.seen.items()) == list(state.seen.items())
    assert "maps" not in state.to_dict()
    assert "seen" not in state.to_dict()


MAP = {
    "nodes": [
        {
            "id": "m",
            "type": "map",
            "items": "{{ input.items }}",
            "max_parallel": 3,
            "node": {
                "type": "function",
                "function": "std.echo",
                "input": "{{ item }}",
                "retry_policy": {"max_attempts": 3, "initial_interval_seconds": 1},
            },
        },
        {"id": "end", "type": "function", "function": "std.echo", "depends_on": ["m"]},
    ]
}


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 2**32),
    st.dictionaries(
        st.sampled_from([f"m[{i}]" for i in range(8)]),
        st.lists(st.sampled_from(["ok", "fail", "fatal"]), min_size=1, max_size=3),
        max_size=4,
    ),
)
def test_failing_and_retried_items_decide_as_the_scan(seed, plan) -> None:
    """Items that fail, retry (timers) and fail for good: the index still decides what the
    scan decides, at every step."""
    definition = parse_definition(MAP, function_exists=lambda name: True)
    run = Run(definition, plan=plan, seed=seed)
    original = run.advance

    def checked() -> None:
        check(definition, run.state)
        original()

    run.advance = checked  # type: ignore[method-assign]  # a check wrapped around each step
    state = run.run_to_end({"items": list(range(8))})
    check(definition, state)
    assert state.status in ("succeeded", "failed")
