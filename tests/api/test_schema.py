"""GET /schema is one valid OpenAPI 3 document, each route once; GET /docs renders it."""

from __future__ import annotations

import inspect
import json
import re

import yaml
from django.core.management import call_command
from drf_spectacular.validation import validate_schema
from rest_framework.test import APIClient

from executions.engine import why
from workflows.rest.schema import engine_document


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
    # Raises SchemaGenerationError on any warning or error of drf-spectacular. The engine's
    # document is made with the engine's settings (workflows/rest/schema.py), which are no
    # project setting: the command makes it inside them.
    with engine_document():
        call_command(
            "spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "s.yaml")
        )
    assert "/executions" in yaml.safe_load((tmp_path / "s.yaml").read_text())["paths"]


def test_a_project_s_own_document_leaves_the_engine_s_routes_out(tmp_path) -> None:
    """What a project generates for its own API (and drf-spectacular's deploy check)."""
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "s.yaml"))
    assert yaml.safe_load((tmp_path / "s.yaml").read_text())["paths"] == {}


def test_docs_render() -> None:
    response = APIClient().get("/docs")
    assert response.status_code == 200
    assert b"swagger" in response.content.lower()


def _schema() -> dict:
    return APIClient().get("/schema", {"format": "json"}).json()


def _operations(schema: dict):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            yield path, method.upper(), operation


def test_every_operation_documents_its_errors_with_a_detail_body() -> None:
    schema = _schema()
    assert schema["components"]["schemas"]["Error"]["required"] == ["detail"]
    for path, method, operation in _operations(schema):
        codes = set(operation["responses"])
        public = path in ("/healthz", "/schema")
        expected = set() if public else {"401", "403"}
        if "{" in path:
            expected |= {"400", "404"}
        if "requestBody" in operation:
            expected |= {"400", "413", "415"}
        if any(p["in"] == "query" for p in operation.get("parameters", [])):
            expected.add("400")
        assert expected <= codes, (method, path, sorted(codes))
        for code in expected:
            body = operation["responses"][code]["content"]["application/json"]["schema"]
            assert body == {"$ref": "#/components/schemas/Error"}, (method, path, code)


def test_conflicts_are_documented_where_the_status_can_refuse() -> None:
    paths = _schema()["paths"]
    for path in ("cancel", "retry", "tasks/{node_id}/approve", "tasks/{node_id}/reject"):
        assert "409" in paths[f"/executions/{{execution_id}}/{path}"]["post"]["responses"], path
    assert "409" in paths["/executions"]["post"]["responses"]  # Idempotency-Key reuse


def test_idempotency_key_header_and_typed_bodies() -> None:
    schema = _schema()
    start = schema["paths"]["/executions"]["post"]
    header = next(p for p in start["parameters"] if p["name"] == "Idempotency-Key")
    assert header["in"] == "header"
    assert header["schema"]["maxLength"] == 255
    body = start["requestBody"]["content"]
    assert list(body) == ["application/json"], "only JSON bodies are accepted"
    components = schema["components"]["schemas"]
    create = components["WorkflowCreateRequest"]["properties"]
    assert create["definition"]["allOf"] == [{"$ref": "#/components/schemas/Definition"}]
    kinds = ["function", "http", "delay", "approval", "workflow", "map", "signal"]
    node = components["Node"]
    assert node["discriminator"]["propertyName"] == "type"
    assert list(node["discriminator"]["mapping"]) == kinds
    for kind, ref in node["discriminator"]["mapping"].items():
        one = components[ref.rsplit("/", 1)[1]]
        assert node["oneOf"].count({"$ref": ref}) == 1
        assert one["required"][:2] == ["id", "type"]
        assert one["additionalProperties"] is False
        assert one["properties"]["type"]["enum"] == [kind]
    limits = schema["paths"]["/executions"]["get"]["parameters"]
    limit = next(p for p in limits if p["name"] == "limit")
    assert limit["schema"]["maximum"] >= 1


def test_the_definition_schema_accepts_what_the_parser_accepts() -> None:
    import jsonschema

    from tests.examples import SIGNUP_DEFINITION
    from workflows.definition_schema import WORKER_ONLY
    from workflows.dsl import TRIGGER_RULES
    from workflows.dsl.bodies import COMMON_FIELDS, GRAPH_FIELDS, TYPE_FIELDS
    from workflows.dsl.parser import TOP_FIELDS
    from workflows.kinds import WORKER_NAMES

    components = _schema()["components"]
    root = {"components": components, **components["schemas"]["Definition"]}
    jsonschema.Draft4Validator(root).validate(SIGNUP_DEFINITION)
    schemas = components["schemas"]
    for kind, fields in TYPE_FIELDS.items():
        # The parser's fields for the kind, a pool and a rate limit only where a worker
        # runs it.
        common = {f for f in COMMON_FIELDS if f not in WORKER_ONLY or kind in WORKER_NAMES}
        node = schemas[f"{kind.capitalize()}Node"]["properties"]
        assert set(node) == {*GRAPH_FIELDS, *common, *fields}, kind
        if kind != "map":
            body = schemas[f"{kind.capitalize()}NodeBody"]["properties"]
            assert set(body) == {*common, *fields}, kind
    assert "MapNodeBody" not in schemas  # a compensation or a map's node is never a map
    assert set(schemas["Definition"]["properties"]) == set(TOP_FIELDS)
    rule = schemas["FunctionNode"]["properties"]["trigger_rule"]
    assert rule["enum"] == list(TRIGGER_RULES)
    echo = {"type": "function", "function": "std.echo"}
    for name in ("one_done", "all_skipped", "all_done_min_one_success", "always"):
        child = {"id": "b", **echo, "depends_on": ["a"], "trigger_rule": name}
        jsonschema.Draft4Validator(root).validate({"nodes": [{"id": "a", **echo}, child]})


def test_the_descriptions_name_no_module_of_the_code() -> None:
    """A view's docstring is its published description: it speaks of the API, never of
    the code behind it (whose notes are comments)."""
    text = json.dumps(_schema())
    modules = re.findall(r"\b(?:workflows|executions|nodes|config)\.[a-z_]+\b", text)
    assert not modules, sorted(set(modules))


def test_the_why_schema_names_every_reason_code() -> None:
    """The codes GET .../why answers with, as executions/engine/why.py writes them."""
    codes = set(re.findall(r'"code": "([a-z_]+)"', inspect.getsource(why)))
    assert {"rate_limited", "parked", "workflow_timeout"} <= codes
    described = _schema()["components"]["schemas"]["WhyReason"]["properties"]["code"]
    named = set(re.findall(r"[a-z_]+", described["description"]))
    assert codes <= named, sorted(codes - named)
