"""Trigger rules against every combination of parent outcomes (Airflow's meanings).

The expected verdicts are written out per rule from Airflow's documentation, apart from
the engine's table in engine/rules.py, and checked for one, two and three parents in
every state a parent can be in.
"""

from __future__ import annotations

import itertools

import pytest

from executions.engine.events import EventType
from executions.engine.rules import RUNS_AFTER_FAILURE, Verdict, trigger_verdict
from executions.engine.state import ExecutionState, NodeState
from executions.engine.statuses import TaskStatus
from tests.unit.engine.sim import Run
from workflows.dsl import TRIGGER_RULES, Definition, Node, RetryPolicy

#: Every state a parent can be in, as (status, attempt); a policy of two attempts makes
#: "failed" at attempt 2 final and at attempt 1 a failure that will be retried.
PARENT_STATES = {
    "succeeded": (TaskStatus.SUCCEEDED, 1),
    "failed": (TaskStatus.FAILED, 2),
    "failed_will_retry": (TaskStatus.FAILED, 1),
    "skipped": (TaskStatus.SKIPPED, 1),
    "cancelled": (TaskStatus.CANCELLED, 1),
    "running": (TaskStatus.RUNNING, 1),
    "retrying": (TaskStatus.RETRYING, 1),
    "waiting": (TaskStatus.WAITING, 1),
    "pending": (TaskStatus.PENDING, 0),
}
SETTLED = {"succeeded", "failed", "skipped", "cancelled"}
FAILED_LIKE = {"failed", "cancelled"}  # Airflow's failed and upstream_failed


def expected(rule: str, parents: tuple[str, ...]) -> Verdict:
    done = all(p in SETTLED for p in parents)
    ok = [p == "succeeded" for p in parents]
    bad = [p in FAILED_LIKE for p in parents]
    skipped = [p == "skipped" for p in parents]
    if rule == "one_success":  # fires on the first success, waits for no one
        return Verdict.RUN if any(ok) else Verdict.SKIP if done else Verdict.WAIT
    if rule == "one_failed":
        return Verdict.RUN if any(bad) else Verdict.SKIP if done else Verdict.WAIT
    if not done:
        return Verdict.WAIT
    holds = {
        "all_success": all(ok),
        "none_failed": not any(bad),
        "all_done": True,
        "none_failed_min_one_success": not any(bad) and any(ok),
        "all_failed": all(bad),
        "none_skipped": not any(skipped),
    }[rule]
    return Verdict.RUN if holds else Verdict.SKIP


def verdict(rule: str, parents: tuple[str, ...]) -> Verdict:
    policy = RetryPolicy(max_attempts=2)
    ids = [f"p{i}" for i in range(len(parents))]
    nodes = [Node(id=i, type="function", retry_policy=policy) for i in ids]
    child = Node(id="c", type="function", depends_on=tuple(ids), trigger_rule=rule)
    definition = Definition(nodes=(*nodes, child))
    state = ExecutionState("e")
    error = {"type": "Boom", "message": "x", "retryable": True}
    for node_id, name in zip(ids, parents, strict=True):
        status, attempt = PARENT_STATES[name]
        failed = status == TaskStatus.FAILED
        state.nodes[node_id] = NodeState(
            node_id, status=status, attempt=attempt, error=error if failed else None
        )
    return trigger_verdict(definition, state, child)


COMBINATIONS = [
    combo
    for size in (1, 2, 3)
    for combo in itertools.combinations_with_replacement(sorted(PARENT_STATES), size)
]


@pytest.mark.parametrize("rule", TRIGGER_RULES)
def test_each_rule_against_every_combination_of_parent_outcomes(rule: str) -> None:
    checked = 0
    for combo in COMBINATIONS:
        # Order matters to an early exit: check every order of the combination.
        for order in set(itertools.permutations(combo)):
            assert verdict(rule, order) == expected(rule, order), (rule, order)
            checked += 1
    assert checked == sum(len(PARENT_STATES) ** n for n in (1, 2, 3))


def test_a_root_runs_whatever_its_rule() -> None:
    for rule in TRIGGER_RULES:
        assert verdict(rule, ()) is Verdict.RUN


def _fan_in_definition(rule: str) -> Definition:
    once = RetryPolicy(max_attempts=1)
    nodes = (
        Node(id="a", type="function", retry_policy=once),
        Node(id="b", type="function", retry_policy=once),
        Node(id="c", type="function", depends_on=("a", "b"), trigger_rule=rule),
    )
    return Definition(nodes=nodes)


def _fan_in(rule: str, plan: dict[str, list[str]]) -> Run:
    run = Run(_fan_in_definition(rule), plan=plan)
    run.run_to_end()
    return run


@pytest.mark.parametrize("rule", sorted(RUNS_AFTER_FAILURE))
def test_under_strict_failure_the_after_failure_rules_still_start(rule: str) -> None:
    run = _fan_in(rule, {"a": ["fatal"], "b": ["fatal"]})
    assert run.state.node("c").status == TaskStatus.SUCCEEDED
    assert run.state.status == "failed"


@pytest.mark.parametrize(
    ("rule", "reason"),
    [
        ("one_success", "execution is failing"),  # holds once b succeeds, too late
        ("none_skipped", "execution is failing"),  # holds, but is not an after-failure rule
        ("none_failed_min_one_success", "upstream did not succeed"),
    ],
)
def test_under_strict_failure_the_other_rules_are_skipped(rule: str, reason: str) -> None:
    """a fails for good first, then b succeeds."""
    run = Run(_fan_in_definition(rule))
    run.start()
    for node_id, result, data in (
        ("a", EventType.TASK_FAILED, {"error": {"type": "Boom", "retryable": False}}),
        ("b", EventType.TASK_COMPLETED, {"output": 1}),
    ):
        run.append(EventType.TASK_STARTED, node_id, 1)
        run.append(result, node_id, 1, data)
        run.advance()
    assert run.state.node("c").status == TaskStatus.SKIPPED
    assert run.state.node("c").reason == reason
    assert run.state.status == "failed"


def test_one_success_starts_before_its_other_parent_settles() -> None:
    nodes = (
        Node(id="a", type="function"),
        Node(id="b", type="function"),
        Node(id="c", type="function", depends_on=("a", "b"), trigger_rule="one_success"),
    )
    run = Run(Definition(nodes=nodes))
    run.start()
    run.append(EventType.TASK_STARTED, "a", 1)
    run.append(EventType.TASK_COMPLETED, "a", 1, {"output": 1})
    run.advance()
    assert run.state.node("b").status == TaskStatus.SCHEDULED
    assert run.state.node("c").status == TaskStatus.SCHEDULED
