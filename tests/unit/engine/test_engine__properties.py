"""Properties of fold and decide over random DAGs and random completion orders."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from executions.engine.decide import decide
from executions.engine.events import EventType, Source
from executions.engine.fold import fold
from executions.engine.rules import is_settled
from executions.engine.state import ExecutionState
from executions.engine.statuses import EXECUTION_TERMINAL, ExecutionStatus, TaskStatus
from tests.unit.engine.sim import Run
from tests.unit.engine.strategies import dags

SETTLING = {
    EventType.TASK_COMPLETED,
    EventType.TASK_SKIPPED,
    EventType.TASK_FAILED,
    EventType.TASK_CANCELLED,
    EventType.TASK_TIMED_OUT,
}
STARTING = {EventType.TASK_SCHEDULED, EventType.TIMER_STARTED}

runs = st.tuples(dags(), st.integers(0, 2**32), st.booleans())


def play(case) -> Run:
    (definition, plan), seed, flag = case
    run = Run(definition, plan=plan, seed=seed)
    run.run_to_end({"flag": flag, "items": [10, 20, 30, 40][: seed % 5]})
    return run


@settings(max_examples=300, deadline=None)
@given(runs)
def test_every_execution_reaches_a_terminal_status(case) -> None:
    run = play(case)
    assert run.state.status in EXECUTION_TERMINAL, run.log
    for node in run.definition.nodes:
        assert is_settled(node, run.state.node(node.id)), (node.id, run.state.node(node.id))


@settings(max_examples=300, deadline=None)
@given(runs)
def test_nodes_start_only_after_their_parents_settle(case) -> None:
    run = play(case)
    settled_at: dict[str, int] = {}
    for event in run.log:
        if event.type in STARTING and event.attempt == 1:
            assert event.node_id is not None
            node = run.definition.node_for(event.node_id)
            if node.trigger_rule in ("one_success", "one_failed", "one_done", "always"):
                # the first parent with that outcome, or none (test_engine__trigger_rules)
                continue
            for parent in node.depends_on:
                assert parent in settled_at, f"{event.node_id} started before {parent} settled"
        if event.type in SETTLING:
            assert event.node_id is not None
            settled_at.setdefault(event.node_id, event.seq)


@settings(max_examples=300, deadline=None)
@given(runs)
def test_folding_is_deterministic_and_snapshots_round_trip(case) -> None:
    run = play(case)
    once = fold(run.log, execution_id=run.execution_id)
    again = fold(run.log, execution_id=run.execution_id)
    assert once == again == run.state
    middle = len(run.log) // 2
    snapshot = ExecutionState.from_dict(fold(run.log[:middle], execution_id="exec-1").to_dict())
    assert fold(run.log[middle:], snapshot) == run.state


@settings(max_examples=300, deadline=None)
@given(runs)
def test_decide_is_a_pure_function_of_the_events_before_it(case) -> None:
    """Each run of engine decisions is exactly what decide returns for the log before it."""
    run = play(case)
    index = 0
    while index < len(run.log):
        if run.log[index].source != Source.ENGINE:
            index += 1
            continue
        end = index
        while end < len(run.log) and run.log[end].source == Source.ENGINE:
            end += 1
        before = fold(run.log[:index], execution_id=run.execution_id)
        expected = [(d.type, d.node_id, d.attempt, d.data) for d in decide(run.definition, before)]
        recorded = [(e.type, e.node_id, e.attempt, e.data) for e in run.log[index:end]]
        assert expected == recorded, f"divergence at seq {run.log[index].seq}"
        assert decide(run.definition, before) == decide(run.definition, before)
        index = end


@settings(max_examples=300, deadline=None)
@given(runs)
def test_outcome_matches_the_plan(case) -> None:
    run = play(case)
    statuses = {n.id: run.state.node(n.id).status for n in run.definition.nodes}
    if run.state.status == ExecutionStatus.SUCCEEDED:
        assert set(statuses.values()) <= {TaskStatus.SUCCEEDED, TaskStatus.SKIPPED}
    else:
        assert TaskStatus.FAILED in statuses.values()
    for node in run.definition.nodes:
        assert run.state.node(node.id).attempt <= node.retry_policy.max_attempts


@settings(max_examples=300, deadline=None)
@given(runs)
def test_a_failed_execution_undoes_succeeded_nodes_latest_first(case) -> None:
    run = play(case)
    undo = [
        n.id
        for n in run.definition.nodes
        if n.compensation is not None and run.state.node(n.id).status == TaskStatus.SUCCEEDED
    ]
    scheduled = [str(e.node_id) for e in run.log if e.type == EventType.COMPENSATION_SCHEDULED]
    if run.state.status != ExecutionStatus.FAILED:
        assert scheduled == []
        return
    assert sorted(scheduled) == sorted(undo)
    completed = {e.node_id: e.seq for e in run.log if e.type == EventType.TASK_COMPLETED}
    assert scheduled == sorted(scheduled, key=lambda node_id: -completed[node_id])
    for node_id in undo:
        assert run.state.node(f"{node_id}.compensation").status == TaskStatus.SUCCEEDED
