"""why(): the reasons the pure explanation gives, from states made by the simulator."""

from __future__ import annotations

from executions.engine.events import EventType, Source
from executions.engine.why import EXECUTION_RULES, NODE_RULES, Rows, why, why_node
from tests.unit.engine.sim import Run
from tests.unit.engine.strategies import ITEM_BODY
from tests.unit.engine.test_engine__engine_error import ECHO, FAN
from workflows.dsl import Definition, Node
from workflows.kinds.map import MapSpec
from workflows.kinds.signal import SignalSpec

ERROR = {"type": "Boom", "message": "x", "retryable": False}


def codes(run: Run, rows: Rows | None = None) -> dict[str, list[str]]:
    return {
        entry["node_id"]: [reason["code"] for reason in entry["reasons"]]
        for entry in why(run.definition, run.state, rows or Rows())
    }


def test_a_running_fan_out() -> None:
    run = Run(FAN, seed=2)
    run.start({})
    assert codes(run) == {
        "a": ["queued"],
        "wait": ["waiting_for_parents"],
        "b": ["waiting_for_parents"],
        "c": ["waiting_for_parents"],
        "end": ["waiting_for_parents"],
    }


def test_a_paused_execution_adds_its_reason_and_keeps_the_nodes_own() -> None:
    run = Run(FAN, seed=2)
    run.start({})
    run.append(EventType.TASK_STARTED, "a", 1)
    run.append(EventType.WORKFLOW_PAUSED, data={"by": "ops"}, source=Source.API)
    run.append(EventType.TASK_COMPLETED, "a", 1, {"output": 1})
    found = codes(run)
    assert found["b"] == ["execution_paused"]  # ready: only the pause holds it back
    assert found["end"] == ["waiting_for_parents", "execution_paused"]


def test_a_failing_execution_names_the_failed_node() -> None:
    run = Run(FAN, seed=2)
    run.start({})
    run.append(EventType.TASK_STARTED, "a", 1)
    run.append(EventType.WORKFLOW_PAUSED, data={}, source=Source.API)
    run.append(EventType.TASK_FAILED, "a", 1, {"error": ERROR})
    entries = {e["node_id"]: e for e in why(FAN, run.state, Rows())}
    assert entries["b"]["reasons"][0] == {
        "code": "upstream_failed",
        "message": "a failed: trigger rule all_success",
        "nodes": ["a"],
    }


def test_map_items_beyond_max_parallel_wait_for_a_slot() -> None:
    definition = Definition(
        nodes=(Node(id="m", type="map", spec=MapSpec("input.items", ITEM_BODY, 1)),)
    )
    run = Run(definition, seed=1)
    run.start({"items": [1, 2, 3]})
    found = codes(run)
    assert found["m"] == ["running"]
    assert found["m[0]"] == ["queued"]
    assert found["m[1]"] == found["m[2]"] == ["max_parallel"]
    item = why_node(definition, run.state, Rows(), "m[2]")
    assert item["reasons"][0]["limit"] == 1


def test_a_signal_node_waits_for_its_signal() -> None:
    node = Node(id="s", type="signal", spec=SignalSpec("go"))
    run = Run(Definition(nodes=(Node(id="a", type="function", spec=ECHO),)), seed=1)
    run.start({})
    run.state.node("s").status = "waiting"
    due = run.clock
    entry = why_node(Definition(nodes=(node,)), run.state, Rows(timers={"s": due}), "s")
    assert entry["reasons"] == [
        {
            "code": "waiting_for_signal",
            "message": "waiting for POST .../signals/go",
            "signal": "go",
            "timeout_at": due.isoformat(),
        }
    ]


def test_later_reasons_slot_in_as_rules() -> None:
    """concurrency_limit and pool_full come with their features: one rule each."""
    run = Run(FAN, seed=2)
    run.start({})

    def pool_full(scene, node, current):
        pool = scene.rows.extra.get("pools", {}).get(node.id)
        if pool:
            yield {"code": "pool_full", "message": f"pool {pool} is full", "pool": pool}

    NODE_RULES["scheduled"].append(pool_full)
    try:
        found = codes(run, Rows(extra={"pools": {"a": "gpu"}}))
    finally:
        NODE_RULES["scheduled"].remove(pool_full)
    assert found["a"] == ["queued", "pool_full"]
    assert len(EXECUTION_RULES) == 4  # not started, concurrency_limit, paused, ended


POOLED = Definition(
    nodes=(
        Node(id="a", type="function", spec=ECHO, pool="api"),
        Node(id="b", type="function", spec=ECHO),
    )
)


def test_a_held_pool_node_is_pool_full_and_a_held_capped_one_is_queued_held() -> None:
    from executions.engine.why import AttemptRow

    run = Run(POOLED, seed=1)
    run.start({})
    held = {
        "a": AttemptRow(attempt=1, status="scheduled", published=False),
        "b": AttemptRow(attempt=1, status="scheduled", published=False),
    }
    rows = Rows(
        attempts=held,
        extra={"pools": {"api": {"slots": 2, "running": 2}}, "in_flight_cap": 64},
    )
    entries = {e["node_id"]: e["reasons"] for e in why(POOLED, run.state, rows)}
    assert entries["a"] == [
        {
            "code": "pool_full",
            "message": "waiting for a free slot in pool api (2 of 2 slots in use)",
            "pool": "api",
            "slots": 2,
            "running": 2,
        }
    ]
    assert [r["code"] for r in entries["b"]] == ["queued"]
    assert "WORKFLOW_MAX_IN_FLIGHT_PER_EXECUTION" in entries["b"][0]["message"]
    # Published (in the broker, not yet claimed): both are simply queued.
    sent = {k: AttemptRow(attempt=1, status="scheduled") for k in held}
    assert codes(run, Rows(attempts=sent)) == {"a": ["queued"], "b": ["queued"]}


def test_a_running_transactional_step_says_its_writes_commit_with_its_result() -> None:
    from executions.engine.why import AttemptRow

    run = Run(POOLED, seed=1)
    run.start({})
    run.append(EventType.TASK_STARTED, "a", 1, {"worker": "w1"})
    run.append(EventType.TASK_STARTED, "b", 1, {"worker": "w2"})
    rows = Rows(
        attempts={
            "a": AttemptRow(attempt=1, status="running", worker="w1", transactional=True),
            "b": AttemptRow(attempt=1, status="running", worker="w2"),
        }
    )
    entries = {e["node_id"]: e["reasons"] for e in why(POOLED, run.state, rows)}
    (transactional,) = entries["a"]
    assert transactional["code"] == "running"
    assert transactional["transactional"] is True
    assert transactional["message"] == (
        "running on w1, in one database transaction with its result: its writes commit only with it"
    )
    # A plain step's reason is as it always was: no such key.
    assert entries["b"] == [
        {"code": "running", "message": "running on w2", "worker": "w2", "lease_expires_at": None}
    ]
