"""Bounds known from the definition alone are a 400 at POST /workflows naming the node,
the field and the setting that raises the bound (limits.py)."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from workflows.models import WorkflowDefinition

pytestmark = pytest.mark.django_db


def fn(**fields: Any) -> dict[str, Any]:
    return {"id": "a", "type": "function", "function": "std.echo", **fields}


CASES: list[Any] = [
    pytest.param(fn(retry_policy={"max_attempts": 2**31 - 1}), "a", "retry_policy.max_attempts",
                 "WORKFLOW_MAX_ATTEMPTS", id="max-attempts"),
    pytest.param(fn(retry_policy={"initial_interval_seconds": 0.001}), "a",
                 "retry_policy.initial_interval_seconds", "WORKFLOW_MIN_RETRY_INTERVAL_SECONDS",
                 id="min-interval"),
    pytest.param(fn(timeout_seconds=10**8), "a", "timeout_seconds", None, id="timeout-ten-years"),
    pytest.param(fn(timeout_seconds=40 * 86400), "a", "timeout_seconds",
                 "WORKFLOW_MAX_TIMEOUT_SECONDS", id="timeout"),
    pytest.param(fn(heartbeat_timeout_seconds=2 * 86400), "a", "heartbeat_timeout_seconds",
                 "WORKFLOW_MAX_HEARTBEAT_TIMEOUT_SECONDS", id="heartbeat"),
    pytest.param(fn(input="{{ input.a" + " || input.a" * 300 + " }}"), "a", "input",
                 "WORKFLOW_MAX_EXPRESSION_LENGTH", id="expression-length"),
    pytest.param({"id": "d", "type": "delay", "until": "9999-12-31T23:59:59-23:59"}, "d", "until",
                 "out of the range", id="until-out-of-range"),
    pytest.param({"id": "m", "type": "map", "items": "input.items", "max_parallel": 5000,
                  "node": {"type": "function", "function": "std.echo"}}, "m", "max_parallel",
                 "WORKFLOW_MAP_MAX_PARALLEL", id="max-parallel"),
    pytest.param(fn(input="x" * 600_000), None, None, "WORKFLOW_MAX_DEFINITION_BYTES",
                 id="definition-bytes"),
]  # fmt: skip


@pytest.mark.parametrize(("node", "node_id", "field", "fragment"), CASES)
def test_a_definition_past_a_bound_is_400_naming_node_field_and_setting(
    api: APIClient, node: dict[str, Any], node_id: str | None, field: str | None, fragment: str
) -> None:
    body = {"name": "bounded", "definition": {"nodes": [node]}}
    response = api.post("/workflows", body, format="json")
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert any(
        e["node"] == node_id and e["field"] == field and (fragment or "") in e["message"]
        for e in errors
    ), errors
    assert not WorkflowDefinition.objects.exists()
