"""The engine's settings (workflows/conf.py): every one has its default there, the engine
reads them nowhere else, a wrong one is refused with its name, and a changed one is read
again (override_settings)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from tests.host.overrides import without_engine_settings
from workflows.conf import (
    PREFIX,
    SETTINGS,
    EngineSettings,
    engine_settings,
    from_environment,
)
from workflows.dsl.limits import limits

ROOT = Path(__file__).resolve().parents[2]
#: The engine's packages: the apps and everything inside them.
ENGINE = ("workflows", "executions", "nodes")


def engine_modules() -> list[Path]:
    return [
        path
        for package in ENGINE
        if (ROOT / package).is_dir()
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts
    ]


def own_reads(tree: ast.AST) -> list[str]:
    """Where a module reads an engine setting itself: `settings.WORKFLOW_X`,
    `settings.VAR_DIR`, `getattr(settings, "WORKFLOW_X", ...)`, or a WORKFLOW_X
    environment variable (os.environ[...], os.environ.get, os.getenv)."""
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "settings"
            and (node.attr.startswith(PREFIX) or node.attr == "VAR_DIR")
        ):
            found.append(f"line {node.lineno}: settings.{node.attr}")
        elif isinstance(node, ast.Call | ast.Subscript):
            texts = node.args if isinstance(node, ast.Call) else [node.slice]
            named = [a for a in texts if isinstance(a, ast.Constant)]
            if any(str(a.value).startswith(PREFIX) for a in named) and _reads_itself(node):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def _reads_itself(node: ast.Call | ast.Subscript) -> bool:
    target = node.func if isinstance(node, ast.Call) else node.value
    text = ast.unparse(target)
    if isinstance(node, ast.Call) and text == "getattr":
        return ast.unparse(node.args[0]) == "settings"
    return text in {"os.environ", "os.environ.get", "os.getenv", "environ.get"}


def test_the_scan_sees_each_way_of_reading_a_setting() -> None:
    source = """
settings.WORKFLOW_A
settings.VAR_DIR
getattr(settings, "WORKFLOW_B", 1)
os.environ.get("WORKFLOW_C", "")
os.environ["WORKFLOW_D"]
os.getenv("WORKFLOW_E")
engine_settings.NODE_QUEUES
getattr(engine_settings, "NODE_QUEUES")
error = "WORKFLOW_F is too low"
"""
    assert len(own_reads(ast.parse(source))) == 6


def test_no_engine_module_reads_a_setting_of_its_own() -> None:
    """Every read goes through workflows.conf, where each setting has its default."""
    reads = {
        str(path.relative_to(ROOT)): found
        for path in engine_modules()
        if (found := own_reads(ast.parse(path.read_text(), str(path))))
    }
    assert not reads, reads


def test_every_workflow_setting_of_the_standalone_project_is_an_engine_setting() -> None:
    standalone = importlib.import_module("config.settings")
    names = {name for name in vars(standalone) if name.startswith(PREFIX)}
    assert names, "config/settings.py sets no WORKFLOW_ setting at all?"
    assert names <= {PREFIX + name for name in SETTINGS}, names - set(SETTINGS)


def test_with_no_setting_every_default_is_there() -> None:
    with without_engine_settings():
        assert not [name for name in dir(settings) if name.startswith(PREFIX)]
        for name, spec in SETTINGS.items():
            assert getattr(engine_settings, name) == spec.clean(spec.default), name
        assert engine_settings.problems() == []
        assert engine_settings.FUNCTION_MODULES == []
        assert engine_settings.NODE_QUEUES == {}
        assert engine_settings.SECRETS == {}
        assert engine_settings.MAX_IN_FLIGHT_PER_EXECUTION == 64
        assert engine_settings.VAR_DIR.is_absolute()
        assert limits().max_expression_work == SETTINGS["MAX_EXPRESSION_WORK"].default
    # Back as the test settings (tests/settings.py) have them.
    assert {"tests.fault_functions", "tests.stuck_functions"} <= set(
        engine_settings.FUNCTION_MODULES
    )


def test_the_typed_names_are_settings() -> None:
    """Each name EngineSettings declares for type checkers is a setting with a default."""
    assert set(EngineSettings.__annotations__) <= set(SETTINGS)


def test_a_changed_setting_is_read_again() -> None:
    assert engine_settings.BULK_MAX_EXECUTIONS == 1000
    with override_settings(WORKFLOW_BULK_MAX_EXECUTIONS=7):
        assert engine_settings.BULK_MAX_EXECUTIONS == 7
    assert engine_settings.BULK_MAX_EXECUTIONS == 1000


def test_a_changed_bound_reaches_the_engine_core() -> None:
    before = limits().max_nodes
    with override_settings(WORKFLOW_MAX_NODES=5):
        assert limits().max_nodes == 5
    assert limits().max_nodes == before


def test_an_unknown_name_is_an_error() -> None:
    with pytest.raises(AttributeError, match="no engine setting 'NODE_QUEUE'"):
        _ = engine_settings.NODE_QUEUE


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "MAX_IN_FLIGHT_PER_EXECUTION",
            0,
            "WORKFLOW_MAX_IN_FLIGHT_PER_EXECUTION must be at least 1",
        ),
        ("NODE_QUEUES", "http", "WORKFLOW_NODE_QUEUES 'http' is not 'node_type:queue,...'"),
        ("NODE_QUEUES", {"http": ""}, "WORKFLOW_NODE_QUEUES must map names to non-empty"),
        ("FUNCTION_MODULES", "nodes.std", None),
        ("FUNCTION_MODULES", [1], "WORKFLOW_FUNCTION_MODULES must be a list of strings"),
        ("SWEEP_INTERVAL", "soon", "WORKFLOW_SWEEP_INTERVAL could not convert"),
        ("METRICS_PUBLIC", "maybe", "WORKFLOW_METRICS_PUBLIC must be True or False"),
        ("OTEL_EXPORTER", "jaeger", "WORKFLOW_OTEL_EXPORTER must be one of"),
        ("MAX_NODES", True, "WORKFLOW_MAX_NODES must be a number"),
    ],
)
def test_a_wrong_setting_names_itself(name: str, value: Any, message: str | None) -> None:
    with override_settings(**{PREFIX + name: value}):
        if message is None:
            getattr(engine_settings, name)
            assert engine_settings.problems() == []
            return
        with pytest.raises(ImproperlyConfigured, match=message.replace("(", r"\(")):
            getattr(engine_settings, name)
        assert [p for p in engine_settings.problems() if p.startswith(PREFIX + name)]


def test_settings_take_the_environment_s_text() -> None:
    with override_settings(
        WORKFLOW_NODE_QUEUES=" http:http , workflow:children ",
        WORKFLOW_HTTP_ALLOWED_HOSTS="a.example, b.example,",
        WORKFLOW_FAULT_INJECTION="1",
        WORKFLOW_MAX_DEPTH="3",
        WORKFLOW_SWEEPER_STALE_SECONDS="",
    ):
        assert engine_settings.NODE_QUEUES == {"http": "http", "workflow": "children"}
        assert engine_settings.HTTP_ALLOWED_HOSTS == ["a.example", "b.example"]
        assert engine_settings.FAULT_INJECTION is True
        assert engine_settings.MAX_DEPTH == 3
        assert engine_settings.SWEEPER_STALE_SECONDS is None


def test_from_environment_reads_only_what_is_set() -> None:
    environ = {
        "WORKFLOW_MAX_IN_FLIGHT_PER_EXECUTION": "8",
        "WORKFLOW_FUNCTION_MODULES": "billing.steps,shipping.steps",
        "WORKFLOW_VAR_DIR": "/srv/engine",
        "WORKFLOW_SECRET_API_TOKEN": "t0k3n",
        "WORKFLOW_TLS": "1",  # the standalone project's own, no engine setting
        "PATH": "/usr/bin",
    }
    assert from_environment(environ) == {
        "WORKFLOW_MAX_IN_FLIGHT_PER_EXECUTION": 8,
        "WORKFLOW_FUNCTION_MODULES": ["billing.steps", "shipping.steps"],
        "WORKFLOW_VAR_DIR": Path("/srv/engine"),
        "WORKFLOW_SECRETS": {"API_TOKEN": "t0k3n"},
    }
    assert from_environment({}) == {}
    with pytest.raises(ImproperlyConfigured, match="WORKFLOW_MAX_IN_FLIGHT_PER_EXECUTION"):
        from_environment({"WORKFLOW_MAX_IN_FLIGHT_PER_EXECUTION": "0"})
