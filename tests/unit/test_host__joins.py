"""The engine inside a host project that sets nothing of the engine's (tests/host/): every
setting has its default, and the host's Celery app, made the standard way with no setting
but its broker, sends every engine task to the engine's queues."""

from __future__ import annotations

from functools import cache
from typing import Any

from tests.host.process import run_probe
from workflows.celery import NODES_QUEUE, ORCHESTRATOR_QUEUE


@cache
def host() -> dict[str, Any]:
    """What tests/host/probe.py sees, in a process of its own on the host's settings."""
    return run_probe("tests.host.probe")


def test_a_host_with_no_engine_setting_has_every_default() -> None:
    seen = host()
    assert seen["settings_module"] == "tests.host.settings"
    assert seen["workflow_settings"] == []
    assert seen["problems"] == []
    assert seen["function_modules"] == []


def test_every_engine_task_carries_its_queue() -> None:
    queues = host()["task_queues"]
    assert queues, "no engine task registered on the host's app"
    assert queues.pop("nodes.tasks.run_task") == NODES_QUEUE
    assert set(queues.values()) == {ORCHESTRATOR_QUEUE}, queues


def test_the_host_s_standard_celery_app_routes_each_engine_message_to_its_queue() -> None:
    seen = host()
    orchestrator = sorted(name for name, queue in seen["task_queues"].items() if queue != "nodes")
    assert seen["sent"]["apply_async"] == {
        "celery": [],
        "orchestrator": orchestrator,
        "nodes": ["nodes.tasks.run_task"],
    }
    # What the engine publishes.
    assert seen["sent"]["publishers"] == {
        "celery": [],
        "orchestrator": [
            "executions.schedules.tasks.release_schedule",
            "executions.tasks.admit",
            "executions.tasks.cancel_execution",
            "executions.tasks.fire_timer",
            "executions.tasks.notify_parent",
        ],
        "nodes": ["nodes.tasks.run_task"],
    }
