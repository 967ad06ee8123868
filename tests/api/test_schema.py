"""GET /schema is one valid OpenAPI 3 document, each route once; GET /docs renders it."""

from __future__ import annotations

from django.core.management import call_command
from drf_spectacular.validation import validate_schema
from rest_framework.test import APIClient


def test_schema_lists_each_route_once_and_validates() -> None:
    response = APIClient().get("/schema", {"format": "json"})
    assert response.status_code == 200
    schema = response.json()
    paths = set(schema["paths"])
    assert not [p for p in paths if p.endswith("/") and p.rstrip("/") in paths]
    assert not [p for p in paths if p.endswith("/")], "trailing-slash twins are not documented"
    assert {"/schedules", "/schedules/{schedule_id}", "/healthz", "/metrics"} <= paths
    operation_ids = [op["operationId"] for item in schema["paths"].values() for op in item.values()]
    assert len(operation_ids) == len(set(operation_ids))
    validate_schema(schema)


def test_schema_generates_without_warnings(tmp_path) -> None:
    # Raises SchemaGenerationError on any warning or error of drf-spectacular.
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "s.yaml"))


def test_docs_render() -> None:
    response = APIClient().get("/docs")
    assert response.status_code == 200
    assert b"swagger" in response.content.lower()
