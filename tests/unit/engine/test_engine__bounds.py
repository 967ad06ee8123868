"""The engine core inside its bounds: an offending node fails with an error that names
the bound and its setting; decide itself never raises for what a definition says."""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from executions.engine.errors import ErrorRecord
from executions.engine.events import EventType
from executions.engine.maps import max_parallel
from executions.engine.retry import retry_delay
from executions.engine.statuses import TaskStatus
from executions.engine.timeutil import EARLIEST, LATEST, plus_seconds
from tests.unit.engine.sim import Run
from tests.waiting import scaled
from workflows.dsl import DefinitionError, RetryPolicy, parse_definition
from workflows.dsl.limits import limits, overridden

STAGE = " | [@,@,@,@,@,@,@,@,@,@][]"


def started(definition: dict[str, Any], input: Any = None) -> Run:
    run = Run(parse_definition(definition))
    run.start(input or {})
    return run


def failure(run: Run, node_id: str) -> dict[str, Any]:
    [event] = [e for e in run.log if e.type == EventType.TASK_FAILED and e.node_id == node_id]
    return event.data["error"]


def test_a_when_that_overflows_fails_its_node_and_not_decide() -> None:
    run = Run(
        parse_definition(
            {
                "nodes": [
                    {"id": "bad", "type": "function", "function": "std.fail"},
                    {
                        "id": "after",
                        "type": "function",
                        "function": "std.echo",
                        "depends_on": ["bad"],
                        "trigger_rule": "all_done",
                        "when": "ceil(`1e999`) == `0`",
                    },
                ]
            }
        ),
        plan={"bad": ["fatal"]},
    )
    state = run.run_to_end({})
    assert state.status == "failed"
    error = failure(run, "after")
    assert error["type"] == "TemplateError"
    assert "OverflowError" in error["message"]
    assert error["retryable"] is False


def test_a_ten_stage_pipe_in_a_first_node_fails_it_fast() -> None:
    begun = time.monotonic()
    run = started(
        {
            "nodes": [
                {
                    "id": "a",
                    "type": "function",
                    "function": "std.echo",
                    "input": "{{ input.x" + STAGE * 10 + " }}",
                }
            ]
        },
        {"x": 1},
    )
    # Its budget counts values built, not a function's own work: the bound in time is what
    # catches uncounted work (generous, and with the machine's factor).
    assert time.monotonic() - begun < scaled(2.0)
    error = failure(run, "a")
    assert error["type"] == "TemplateError"
    assert "WORKFLOW_MAX_EXPRESSION_WORK" in error["message"]
    assert run.state.status == "failed"


@pytest.mark.parametrize(
    ("until", "fragment"),
    [
        ("9999-12-31T23:59:59-23:59", "out of the range"),
        ("8000-01-01T00:00:00+00:00", "WORKFLOW_MAX_DELAY_SECONDS"),
    ],
)
def test_a_templated_until_past_the_bound_fails_the_delay(until: str, fragment: str) -> None:
    run = started(
        {"nodes": [{"id": "d", "type": "delay", "until": "{{ input.until }}"}]}, {"until": until}
    )
    error = failure(run, "d")
    assert error["type"] == "LimitExceeded"
    assert fragment in error["message"]
    assert not [e for e in run.log if e.type == EventType.TIMER_STARTED]


def test_a_templated_until_within_the_bound_waits() -> None:
    run = started(
        {"nodes": [{"id": "d", "type": "delay", "until": "{{ input.until }}"}]},
        {"until": "2027-01-01T00:00:00+00:00"},
    )
    assert run.state.node("d").status == TaskStatus.WAITING


def map_definition(**fields: Any) -> dict[str, Any]:
    body = {"type": "function", "function": "std.echo", "input": "{{ item }}"}
    return {"nodes": [{"id": "m", "type": "map", "items": "input.items", "node": body, **fields}]}


def test_a_map_over_more_items_than_the_bound_fails_without_starting_any() -> None:
    run = started(map_definition(), {"items": list(range(limits().map_max_items + 1))})
    error = failure(run, "m")
    assert error["type"] == "LimitExceeded"
    assert "WORKFLOW_MAP_MAX_ITEMS" in error["message"]
    assert "10,001" in error["message"]
    assert not [e for e in run.log if e.node_id and e.node_id.startswith("m[")]
    assert run.state.status == "failed"


def test_the_bound_on_items_follows_the_setting() -> None:
    with overridden(map_max_items=3):
        assert failure(started(map_definition(), {"items": [1, 2, 3, 4]}), "m")
        run = started(map_definition(), {"items": [1, 2, 3]})
    assert run.state.node("m").status == TaskStatus.RUNNING


def scheduled_items(run: Run) -> int:
    return sum(
        1
        for e in run.log
        if e.type == EventType.TASK_SCHEDULED and e.node_id and e.node_id.startswith("m[")
    )


def test_a_map_without_max_parallel_starts_the_default_number_at_once() -> None:
    run = started(map_definition(), {"items": list(range(500))})
    assert scheduled_items(run) == limits().map_default_max_parallel == 32
    assert max_parallel(run.definition.by_id["m"]) == 32


def test_a_map_with_max_parallel_starts_that_many() -> None:
    assert scheduled_items(started(map_definition(max_parallel=5), {"items": list(range(50))})) == 5


def test_a_large_map_runs_to_the_end_in_order() -> None:
    run = Run(parse_definition(map_definition(max_parallel=7)))
    state = run.run_to_end({"items": list(range(60))}, max_steps=10_000)
    assert state.status == "succeeded"
    assert len(state.node("m").output) == 60


def test_a_failed_item_still_fails_the_map_and_skips_the_rest() -> None:
    run = Run(parse_definition(map_definition(max_parallel=2)), plan={"m[1]": ["fatal"]})
    state = run.run_to_end({"items": list(range(10))}, max_steps=10_000)
    assert state.status == "failed"
    assert state.node("m").error["type"] == "MapItemFailed"
    assert state.node("m[9]").status == TaskStatus.SKIPPED


T = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (math.inf, LATEST),
        (1e300, LATEST),
        (-math.inf, EARLIEST),
        (math.nan, T),
        (60.0, datetime(2026, 1, 1, 0, 1, tzinfo=UTC)),
    ],
)
def test_plus_seconds_never_overflows(seconds: float, expected: datetime) -> None:
    assert plus_seconds(T, seconds) == expected


POLICY = RetryPolicy(initial_interval_seconds=1.0, max_interval_seconds=60.0, jitter=False)


@pytest.mark.parametrize(
    ("retry_after", "expected"),
    [(math.inf, 1.0), (math.nan, 1.0), (-5.0, 1.0), (1e308, 60.0), (30, 30.0)],
)
def test_a_retry_after_of_any_value_gives_a_finite_delay(
    retry_after: float, expected: float
) -> None:
    error = ErrorRecord(details={"retry_after_seconds": retry_after})
    assert retry_delay(POLICY, execution_id="e", node_id="n", attempt=1, error=error) == expected


ATOMS = ["input.x", "@", "`1`", "`1e999`", "`-1`", "'s'", "input.x[0]", "nodes.a.output"]
UNARY = ["ceil({})", "abs({})", "length({})", "to_string({})", "sort({})", "max({})",
         "to_number({})", "keys({})", "{}[*]", "{}[]", "{{k: {}}}", "{}[?@ > `1`]",
         "{} | [@,@,@,@,@,@,@,@,@,@][]", "!{}", "({})"]  # fmt: skip
BINARY = ["{} == {}", "{} > {}", "{} || {}", "{} && {}", "[{}, {}]", "merge({}, {})"]
#: JMESPath built from pieces that overflow, mistype, multiply and nest: most of what it
#: yields compiles, so the property sees evaluation, not just syntax errors.
EXPRESSION = st.recursive(
    st.sampled_from(ATOMS),
    lambda inner: st.one_of(
        st.tuples(st.sampled_from(UNARY), inner).map(lambda t: t[0].format(t[1])),
        st.tuples(st.sampled_from(BINARY), inner, inner).map(lambda t: t[0].format(t[1], t[2])),
    ),
    max_leaves=12,
)
INPUT = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=2), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(when=EXPRESSION, template=EXPRESSION, items=EXPRESSION, x=INPUT)
def test_decide_survives_any_expression_over_any_input(
    when: str, template: str, items: str, x: Any
) -> None:
    """Whatever `when`, a template and a map's `items` say, the execution runs to an end:
    an expression that fails, overflows or runs long fails its node, never decide."""
    definition = {
        "nodes": [
            {
                "id": "a",
                "type": "function",
                "function": "std.echo",
                "input": {"v": "{{ input.x }}"},
            },
            {
                "id": "b",
                "type": "function",
                "function": "std.echo",
                "depends_on": ["a"],
                "trigger_rule": "all_done",
                "when": when,
                "input": "{{ nodes.a.output | " + template + " }}",
            },
            {
                "id": "m",
                "type": "map",
                "depends_on": ["a"],
                "items": items,
                "node": {"type": "function", "function": "std.echo", "input": "{{ item }}"},
            },
        ]
    }
    try:
        parsed = parse_definition(definition)
    except DefinitionError:
        assume(False)
        return
    # Enough steps for the widest map `items` may make (each item a few steps): a run
    # still working through one when a small budget ran out is not stuck (hypothesis
    # found an `items` of 274 items at 500 steps).
    steps = 500 + 4 * limits().map_max_items
    state = Run(parsed).run_to_end({"x": x}, max_steps=steps)
    assert state.status in ("succeeded", "failed"), state.status


def test_one_decide_shares_one_budget_across_all_its_first_nodes() -> None:
    """Each template fits WORKFLOW_MAX_EXPRESSION_WORK, but forty of them in one step
    (inside POST /executions) would not fit WORKFLOW_MAX_STEP_WORK: the first nodes run,
    the rest fail saying so, and the step ends fast."""
    heavy = "{{ length(input.items[*].[@,@,@,@]) }}"
    nodes = [
        {"id": f"n{i}", "type": "function", "function": "std.echo", "input": heavy}
        for i in range(40)
    ]
    begun = time.monotonic()
    run = started({"nodes": nodes}, {"items": list(range(10_000))})
    assert time.monotonic() - begun < scaled(5.0)
    scheduled = [e.node_id for e in run.log if e.type == EventType.TASK_SCHEDULED]
    failed = [e for e in run.log if e.type == EventType.TASK_FAILED]
    assert scheduled
    assert failed
    assert len(scheduled) + len(failed) == 40
    assert scheduled == [f"n{i}" for i in range(len(scheduled))]  # in declared order
    assert all("WORKFLOW_MAX_STEP_WORK" in e.data["error"]["message"] for e in failed)
    with overridden(max_step_work=10**9):
        assert len(started({"nodes": nodes}, {"items": list(range(10_000))}).log) == 41


def test_cancelling_a_running_map_cancels_its_pending_and_running_items() -> None:
    """decide leaves pending items out of its per-call pass except under a cancel."""
    run = started(map_definition(max_parallel=2), {"items": list(range(6))})
    run.append(EventType.TASK_STARTED, "m[0]", 1)
    run.append(EventType.TASK_COMPLETED, "m[0]", 1, {"output": 0})
    run.advance()
    run.append(EventType.WORKFLOW_CANCEL_REQUESTED, data={"by": "ops"})
    run.advance()
    statuses = {i: run.state.node(f"m[{i}]").status for i in range(6)}
    assert statuses[0] == TaskStatus.SUCCEEDED
    assert all(statuses[i] == TaskStatus.CANCELLED for i in range(1, 6)), statuses
    assert run.state.status == "cancelled"
