"""Random definitions, expressions and inputs through start, the worker task and the
sweeper, in process against the real database: none of them may raise, every execution
must end, and every log must verify. Some cases also have their version row corrupted at
a random point: those must end with an engine error naming it, and verify all the same.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from executions.engine.statuses import EXECUTION_TERMINAL
from executions.models import Attempt, AttemptStatus, Execution, Timer
from executions.services.start import execution_start
from executions.services.sweep import sweep
from executions.worker.runtime import run_task
from nodes.registry import function_exists
from tests.integration.corruption import GARBAGE, set_definition
from tests.integration.engine import assert_replayable
from workflows.dsl import DefinitionError
from workflows.dsl.parser import parse_definition
from workflows.models import WorkflowDefinition, WorkflowVersion

#: Ordinary and hostile expressions: overflow, huge fan-outs, missing paths, wrong types.
EXPRESSIONS = [
    "input.x",
    "input.x.y",
    "input.items",
    "input.items[0]",
    "length(input.items)",
    "sum(input.items)",
    "avg(input.items)",
    "max(input.items)",
    "abs(input.x)",
    "ceil(`1e999`) == `0`",
    "floor(`1e308`)",
    "to_number('1e999')",
    "input.items | [@, @, @][]",
    "join(',', input.items)",
    "not_null(input.missing, `3`)",
    "starts_with(input.x, 'a')",
    "nodes.n0.output",
    "nodes.n0.output.x",
    "execution.id",
    "`[1, 2, 3]`",
    "`null`",
    "`true`",
]
expression = st.sampled_from(EXPRESSIONS)
# No NUL and no unpaired surrogate: the API refuses both before any start
# (workflows/rest/parsers.py, tests/api/test_no_500.py) and PostgreSQL cannot store them, so a
# service-level start never sees one.
text = st.characters(exclude_characters="\x00", exclude_categories=["Cs"])
scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(text, max_size=8)
json_values = st.recursive(
    scalars | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(text, max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
template = expression.map(lambda e: "{{ " + e + " }}")
inputs = st.fixed_dictionaries(
    {"x": scalars, "items": st.lists(scalars, max_size=4) | scalars}, optional={"y": json_values}
)

#: Outcomes seen across examples, printed for the report.
SEEN: Counter[str] = Counter()


@st.composite
def definitions(draw: st.DrawFn) -> dict[str, Any]:
    count = draw(st.integers(1, 5))
    nodes = []
    for index in range(count):
        node: dict[str, Any] = {"id": f"n{index}"}
        kind = draw(st.sampled_from(["echo", "echo", "fail", "noop", "delay", "map"]))
        if kind == "echo":
            node |= {"type": "function", "function": "std.echo"}
            node["input"] = draw(template | st.dictionaries(st.sampled_from("abc"), template))
        elif kind == "fail":
            retryable = draw(st.booleans())
            node |= {"type": "function", "function": "std.fail"}
            node["input"] = {"message": draw(template), "retryable": retryable}
        elif kind == "noop":
            node |= {"type": "function", "function": "std.noop"}
        elif kind == "delay":
            node |= {"type": "delay", "seconds": 0}
        else:
            body = {"type": "function", "function": "std.echo", "input": "{{ item }}"}
            node |= {"type": "map", "items": draw(expression), "node": body}
        if index:
            parents = draw(st.sets(st.sampled_from([f"n{i}" for i in range(index)]), max_size=2))
            node["depends_on"] = sorted(parents)
        if draw(st.booleans()):
            node["when"] = draw(expression)
        node["trigger_rule"] = draw(st.sampled_from(["all_success", "none_failed", "all_done"]))
        nodes.append(node)
    definition: dict[str, Any] = {
        "nodes": nodes,
        "retry_policy": {"max_attempts": 2, "initial_interval_seconds": 0.1},
    }
    if draw(st.booleans()):
        definition["output"] = draw(template)
    return definition


def drive(execution: Execution, corrupt_at: int | None) -> Execution:
    """Play the workers and the clock until the execution ends (timers made due at once);
    at round `corrupt_at`, corrupt its version row, as a bug or bad data would."""
    for round in range(40):
        execution.refresh_from_db()
        if execution.status in EXECUTION_TERMINAL:
            return execution
        if round == corrupt_at:
            set_definition(execution.version_id, GARBAGE)
        scheduled = Attempt.objects.filter(execution=execution, status=AttemptStatus.SCHEDULED)
        for attempt_id in scheduled.values_list("pk", flat=True):
            run_task(attempt_id)
        Timer.objects.filter(execution=execution, fired_at__isnull=True).update(
            due_at=timezone.now() - timedelta(seconds=1)
        )
        sweep()
    execution.refresh_from_db()
    return execution


@pytest.mark.django_db
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much],
)
@given(definition=definitions(), input=inputs, corrupt_at=st.none() | st.integers(0, 3))
def test_random_definitions_never_break_start_the_worker_or_the_sweeper(
    definition: dict[str, Any], input: dict[str, Any], corrupt_at: int | None
) -> None:
    try:
        parse_definition(definition, function_exists=function_exists)
    except DefinitionError:
        SEEN["refused at definition time"] += 1
        assume(False)
    workflow = WorkflowDefinition.objects.create(name=f"fuzz-{WorkflowDefinition.objects.count()}")
    version = WorkflowVersion.objects.create(workflow=workflow, version=1, definition=definition)
    execution, _ = execution_start(version=version, input=input)
    done = drive(execution, corrupt_at)
    set_definition(version.pk, definition)  # readable again, for the replay check
    assert done.status in EXECUTION_TERMINAL, f"{done.status} after 40 rounds: {definition}"
    error = done.error or {}
    SEEN[error.get("type") or (error.get("cause") or {}).get("type") or done.status] += 1
    if error.get("type") == "EngineError":
        assert corrupt_at is not None, f"an engine error with nothing corrupted: {error}"
        assert error["message"].startswith("DefinitionError"), error
    assert_replayable(done)


def teardown_module() -> None:
    print(f"\nfuzzed outcomes: {dict(SEEN)}")
