"""Fault injection's pure side: which faults hit which attempt, and that decide records
them as decisions that verify re-derives (engine/faults.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from executions.engine.decide import decide
from executions.engine.events import Event, EventType, Source
from executions.engine.faults import draw, faults_for
from executions.engine.fold import fold
from executions.engine.verify import verify
from workflows.dsl import Definition, Node
from workflows.kinds.delay import DelaySpec
from workflows.kinds.function import FunctionSpec

DEFINITION = Definition(
    nodes=(
        Node(id="work", type="function", spec=FunctionSpec("std.echo")),
        Node(id="wait", type="delay", spec=DelaySpec(seconds=5)),
    )
)
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def started(faults: dict | None) -> list[Event]:
    data = {"input": {}, **({"faults": faults} if faults is not None else {})}
    return [Event(1, EventType.WORKFLOW_STARTED, T0, data=data, source=Source.API)]


def test_draw_is_a_pure_function_of_its_arguments() -> None:
    assert draw(7, "crash_after_effect", "n", 1) == draw(7, "crash_after_effect", "n", 1)
    values = {draw(seed, "crash_after_effect", "n", 1) for seed in range(200)}
    assert len(values) == 200
    assert all(0 <= value < 1 for value in values)
    # Each of (seed, fault, node, attempt) matters.
    base = draw(7, "crash_after_effect", "n", 1)
    assert base != draw(8, "crash_after_effect", "n", 1)
    assert base != draw(7, "duplicate_delivery", "n", 1)
    assert base != draw(7, "crash_after_effect", "m", 1)
    assert base != draw(7, "crash_after_effect", "n", 2)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (None, []),
        ({}, []),
        ({"duplicate_delivery": 0, "crash_after_effect": 0}, []),
        ({"duplicate_delivery": 1.0, "seed": 3}, ["duplicate_delivery"]),
        ({"crash_after_effect": 1.0}, ["crash_after_effect"]),
        (
            {"duplicate_delivery": 1, "crash_after_effect": 1, "delay_result_seconds": 2},
            ["duplicate_delivery", "crash_after_effect", "delay_result"],
        ),
    ],
)
def test_faults_for_follows_the_probabilities(spec, expected) -> None:
    assert [f.fault for f in faults_for(spec, "n", 1)] == expected


def test_a_probability_hits_about_that_share_of_attempts() -> None:
    hits = sum(
        bool(faults_for({"crash_after_effect": 0.3, "seed": 1}, "n", attempt))
        for attempt in range(1, 2001)
    )
    assert 500 < hits < 700


def test_a_delay_is_at_most_its_bound_and_the_same_on_every_call() -> None:
    spec = {"delay_result_seconds": 2.5, "seed": 9}
    delays = [float(faults_for(spec, "n", a)[0].seconds or 0) for a in range(1, 50)]
    assert all(0 <= d <= 2.5 for d in delays)
    assert delays == [float(faults_for(spec, "n", a)[0].seconds or 0) for a in range(1, 50)]


def test_decide_records_the_faults_of_each_worker_attempt_it_schedules() -> None:
    faults = {"duplicate_delivery": 1.0, "delay_result_seconds": 1.0, "seed": 4}
    decisions = decide(DEFINITION, fold(started(faults), execution_id="e"))
    shown = [(d.type, d.node_id, d.attempt, d.data.get("fault")) for d in decisions]
    # The delay node runs in the orchestrator: no worker, no fault.
    assert shown == [
        (EventType.TASK_SCHEDULED, "work", 1, None),
        (EventType.FAULT_INJECTED, "work", 1, "duplicate_delivery"),
        (EventType.FAULT_INJECTED, "work", 1, "delay_result"),
        (EventType.TIMER_STARTED, "wait", 1, None),
    ]
    assert decisions[2].data["seconds"] == faults_for(faults, "work", 1)[1].seconds


def test_without_faults_decide_records_none() -> None:
    decisions = decide(DEFINITION, fold(started(None), execution_id="e"))
    assert EventType.FAULT_INJECTED not in {d.type for d in decisions}


def test_verify_rederives_the_faults_and_catches_a_changed_one() -> None:
    events = started({"crash_after_effect": 1.0, "seed": 2})
    for decision in decide(DEFINITION, fold(events, execution_id="e")):
        events.append(decision.as_event(len(events) + 1, T0))
    assert verify(DEFINITION, events, execution_id="e") is None
    index = next(i for i, e in enumerate(events) if e.type == EventType.FAULT_INJECTED)
    altered = list(events)
    original = altered[index]
    altered[index] = Event(
        original.seq, original.type, T0, original.node_id, original.attempt,
        {**original.data, "seed": 3}, Source.ENGINE,
    )  # fmt: skip
    found = verify(DEFINITION, altered, execution_id="e")
    assert found is not None
    assert found.seq == original.seq
