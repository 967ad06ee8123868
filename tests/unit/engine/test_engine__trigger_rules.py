"""Trigger rules against every combination of parent outcomes (Airflow's meanings).

The expected verdicts are written out per rule from Airflow's documentation, apart from
the engine's table in engine/rules.py, and checked for one, two and three parents in
every state a parent can be in.
"""

from __future__ import annotations

import itertools

import pytest

from executions.engine.decide import decide
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
FATAL = {"type": "Boom", "message": "x", "retryable": False}


def expected(rule: str, parents: tuple[str, ...]) -> Verdict:
    done = all(p in SETTLED for p in parents)
    ok = [p == "succeeded" for p in parents]
    bad = [p in FAILED_LIKE for p in parents]
    skipped = [p == "skipped" for p in parents]
    if rule == "one_success":  # fires on the first success, waits for no one
        return Verdict.RUN if any(ok) else Verdict.SKIP if done else Verdict.WAIT
    if rule == "one_failed":
        return Verdict.RUN if any(bad) else Verdict.SKIP if done else Verdict.WAIT
    if rule == "one_done":  # fires on the first success or failure; skipped is not done
        finished = [o or b for o, b in zip(ok, bad, strict=True)]
        return Verdict.RUN if any(finished) else Verdict.SKIP if done else Verdict.WAIT
    if rule == "always":  # no dependency at all: runs whatever its parents are doing
        return Verdict.RUN
    if not done:
        return Verdict.WAIT
    holds = {
        "all_success": all(ok),
        "none_failed": not any(bad),
        "all_done": True,
        "none_failed_min_one_success": not any(bad) and any(ok),
        "all_failed": all(bad),
        "none_skipped": not any(skipped),
        "all_skipped": all(skipped),
        "all_done_min_one_success": any(ok),
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
    # all_done_min_one_success needs a success besides the failure; the others hold on two.
    b = ["ok"] if rule == "all_done_min_one_success" else ["fatal"]
    run = _fan_in(rule, {"a": ["fatal"], "b": b})
    assert run.state.node("c").status == TaskStatus.SUCCEEDED
    assert run.state.status == "failed"


@pytest.mark.parametrize(
    ("rule", "reason"),
    [
        ("one_success", "execution is failing"),  # holds once b succeeds, too late
        ("none_skipped", "execution is failing"),  # holds, but is not an after-failure rule
        ("none_failed_min_one_success", "upstream did not succeed"),
        ("all_skipped", "upstream did not succeed"),
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


def _started_before_b_settles(rule: str, a_result: EventType, a_data: dict) -> Run:
    """a settles, b is still running: c's verdict comes before b has an outcome."""
    run = Run(_fan_in_definition(rule))
    run.start()
    run.append(EventType.TASK_STARTED, "a", 1)
    run.append(a_result, "a", 1, a_data)
    run.append(EventType.TASK_STARTED, "b", 1)
    run.advance()
    assert run.state.node("b").status == TaskStatus.RUNNING
    return run


def test_one_done_starts_on_a_first_failure_and_the_execution_still_fails() -> None:
    run = _started_before_b_settles("one_done", EventType.TASK_FAILED, {"error": FATAL})
    assert run.state.node("c").status == TaskStatus.SCHEDULED
    run.run_to_end()
    assert run.state.node("c").status == TaskStatus.SUCCEEDED
    assert run.state.status == "failed"


def test_one_done_starts_on_a_first_success() -> None:
    run = _started_before_b_settles("one_done", EventType.TASK_COMPLETED, {"output": 1})
    assert run.state.node("c").status == TaskStatus.SCHEDULED


def test_one_done_is_skipped_when_every_parent_was_skipped() -> None:
    nodes = (
        Node(id="a", type="function", when="input.go"),
        Node(id="b", type="function", when="input.go"),
        Node(id="c", type="function", depends_on=("a", "b"), trigger_rule="one_done"),
    )
    run = Run(Definition(nodes=nodes))
    run.run_to_end({"go": False})
    assert run.state.node("c").status == TaskStatus.SKIPPED
    assert run.state.status == "succeeded"


def test_always_starts_with_the_roots_before_its_parents_run() -> None:
    run = Run(_fan_in_definition("always"))
    run.start()
    assert {n: run.state.node(n).status for n in "abc"} == dict.fromkeys(
        "abc", TaskStatus.SCHEDULED
    )


def test_always_starts_even_when_the_execution_is_already_failing() -> None:
    """A pending `always` node seen after a parent failed for good still starts."""
    run = _started_before_b_settles("always", EventType.TASK_COMPLETED, {"output": 1})
    c = run.state.node("c")
    c.status, c.attempt = TaskStatus.PENDING, 0  # as if something had held it back
    run.state.nodes["a"] = NodeState("a", status=TaskStatus.FAILED, attempt=1, error=FATAL)
    starts = [d for d in decide(run.definition, run.state) if d.node_id == "c"]
    assert [d.type for d in starts] == [EventType.TASK_SCHEDULED]


@pytest.mark.parametrize(
    ("skip_a", "skip_b", "ran"),
    [(True, True, True), (True, False, False), (False, False, False)],
)
def test_all_skipped_runs_only_when_every_parent_was_skipped(
    skip_a: bool, skip_b: bool, ran: bool
) -> None:
    nodes = (
        Node(id="a", type="function", when="input.skip_a != `true`"),
        Node(id="b", type="function", when="input.skip_b != `true`"),
        Node(id="c", type="function", depends_on=("a", "b"), trigger_rule="all_skipped"),
    )
    run = Run(Definition(nodes=nodes))
    run.run_to_end({"skip_a": skip_a, "skip_b": skip_b})
    expected_status = TaskStatus.SUCCEEDED if ran else TaskStatus.SKIPPED
    assert run.state.node("c").status == expected_status
    assert run.state.status == "succeeded"


def test_all_done_min_one_success_waits_for_every_parent_then_runs_after_a_failure() -> None:
    """Unlike none_failed_min_one_success (skipped above): a failure first, then a success."""
    run = _started_before_b_settles(
        "all_done_min_one_success", EventType.TASK_FAILED, {"error": FATAL}
    )
    assert run.state.node("c").status == TaskStatus.PENDING
    run.append(EventType.TASK_COMPLETED, "b", 1, {"output": 1})
    run.advance()
    assert run.state.node("c").status == TaskStatus.SCHEDULED
    run.run_to_end()
    assert run.state.node("c").status == TaskStatus.SUCCEEDED
    assert run.state.status == "failed"


def test_all_done_min_one_success_is_skipped_without_a_success() -> None:
    run = _fan_in("all_done_min_one_success", {"a": ["fatal"], "b": ["fatal"]})
    assert run.state.node("c").status == TaskStatus.SKIPPED
    assert run.state.status == "failed"
