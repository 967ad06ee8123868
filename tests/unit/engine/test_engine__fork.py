"""decide works on a copy-on-write fork: it must never change the state it is given, and
must decide exactly what it decided when it worked on a deep copy."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from executions.engine.decide import _step, decide
from executions.engine.events import EventType, Source
from executions.engine.fold import apply_event
from executions.engine.state import ExecutionState
from tests.unit.engine.sim import Run
from tests.unit.engine.strategies import dags


def decide_on_deep_copy(definition, state: ExecutionState) -> list:
    """The reference: decide as it was before the fork, folding into a deep copy."""
    working = copy.deepcopy(state)
    decisions: list = []
    for _ in range(4 * len(definition.nodes) + 8):
        step = list(_step(definition, working))
        if not step:
            return decisions
        for decision in step:
            assert working.now is not None
            apply_event(working, decision.as_event(working.last_seq + 1, working.now))
        decisions.extend(step)
    raise AssertionError("no fixpoint")


@settings(max_examples=200, deadline=None)
@given(dags(), st.integers(0, 2**32), st.booleans())
def test_decide_leaves_its_state_unchanged_at_every_step(case, seed, flag) -> None:
    definition, plan = case
    run = Run(definition, plan=plan, seed=seed)
    original = run.advance

    def checked() -> None:
        before = copy.deepcopy(run.state)
        decisions = decide(definition, run.state)
        assert run.state == before, "decide mutated the state it was given"
        assert decide(definition, run.state) == decisions, "decide is not deterministic"
        assert decide_on_deep_copy(definition, before) == decisions
        original()

    run.advance = checked  # type: ignore[method-assign]  # a check wrapped around each step
    run.run_to_end({"flag": flag})


def test_a_fork_shares_nodes_until_owned() -> None:
    state = ExecutionState("e")
    state.node("a").started_attempts.append(1)
    fork = state.fork()
    assert fork.nodes["a"] is state.nodes["a"]
    owned = fork.own("a")
    owned.status = "succeeded"
    assert state.nodes["a"].status == "pending"
    assert fork.node("b") is not None
    assert "b" not in state.nodes


@settings(max_examples=60, deadline=None)
@given(dags(), st.integers(0, 2**32), st.integers(0, 12))
def test_a_cancel_decided_at_any_point_leaves_the_state_unchanged(case, seed, after) -> None:
    """decide's first step reads the state it is given, not a fork: the cancel step reads
    every node, most of them never mentioned by an event (they must not be added)."""
    definition, plan = case
    run = Run(definition, plan=plan, seed=seed)
    run.start({"flag": True})
    for _ in range(after):
        if not run.step():
            break
    run.append(EventType.WORKFLOW_CANCEL_REQUESTED, source=Source.API)
    before = copy.deepcopy(run.state)
    decisions = decide(definition, run.state)
    assert run.state == before, "decide mutated the state it was given"
    assert decide_on_deep_copy(definition, before) == decisions
