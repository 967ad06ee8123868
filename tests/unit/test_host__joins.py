"""The engine inside a host project that sets nothing of the engine's (tests/host/): every
setting has its default, the shipped functions and the host app's own are registered and
the demo's are not, and the host's Celery app, made the standard way with no setting but
its broker, sends every engine task to the engine's queues."""

from __future__ import annotations

import sys
from functools import cache
from typing import Any

import pytest
from django.apps import apps
from django.test import override_settings

from nodes.registry import function_exists, unregister
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


def test_the_shipped_and_the_host_app_s_functions_are_registered_and_no_demo() -> None:
    functions = host()["functions"]
    assert {"std.echo", "std.noop", "std.sleep", "std.fail"} <= set(functions)
    # tests/host/shop/workflow_functions.py: found by its name alone.
    assert "shop.total" in functions
    # The demo's functions belong to the standalone project's demo app, not installed here.
    assert not [name for name in functions if name.startswith("demo.")], functions


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


#: A module of functions of the test's own, listed in WORKFLOW_FUNCTION_MODULES.
LISTED = "tests.host.listed_functions"


@pytest.fixture
def listed_module() -> Any:
    yield LISTED
    unregister("listed.double")
    sys.modules.pop(LISTED, None)


def test_a_listed_module_is_added_to_the_shipped_functions(listed_module: str) -> None:
    assert not function_exists("listed.double")
    with override_settings(WORKFLOW_FUNCTION_MODULES=[listed_module]):
        apps.get_app_config("nodes").ready()
    assert function_exists("listed.double")
    assert function_exists("std.echo")
