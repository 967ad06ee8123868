"""The workflows REST API: create, read, version; every rejection is a 400 (or
413) with a "detail", and a bad definition names each node and field."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.examples import SIGNUP_DEFINITION
from workflows.models import WorkflowDefinition, WorkflowVersion

pytestmark = pytest.mark.django_db

DEFINITION: dict[str, Any] = SIGNUP_DEFINITION
ONE_NODE: dict[str, Any] = {"nodes": [{"id": "only", "type": "function", "function": "std.noop"}]}


def create(client: APIClient, name: str = "onboarding", definition: Any = DEFINITION, **extra):
    body = {"name": name, "definition": definition, **extra}
    return client.post("/workflows", body, format="json")


def post_raw(client: APIClient, path: str, content: bytes | str):
    # Django's generic() sends bytes as they are; the stubs say str only.
    return client.generic("POST", path, content, content_type="application/json")  # type: ignore[arg-type]


def test_anonymous_requests_get_401(api: APIClient) -> None:
    workflow_id = create(api).json()["id"]
    anonymous = APIClient()
    for path in ("/workflows", f"/workflows/{workflow_id}", f"/workflows/{workflow_id}/versions"):
        response = anonymous.get(path)
        assert response.status_code == 401, path
        assert "detail" in response.json()
    assert create(anonymous, name="other").status_code == 401
    assert (
        anonymous.post(f"/workflows/{workflow_id}/versions", {}, format="json").status_code == 401
    )


def test_create_returns_the_workflow_with_version_1(api: APIClient) -> None:
    response = create(api, description="New user onboarding")
    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == {
        "id",
        "name",
        "description",
        "latest_version",
        "created_at",
        "created_by",
        "definition",
    }
    assert body["name"] == "onboarding"
    assert body["created_by"] == "operator"  # the token's user (audit)
    assert body["description"] == "New user onboarding"
    assert body["latest_version"] == 1
    assert body["definition"] == DEFINITION
    version = WorkflowVersion.objects.get(workflow_id=body["id"])
    assert (version.version, version.definition) == (1, DEFINITION)


@pytest.mark.parametrize("slash", ["", "/"])
def test_read_by_id_or_name_with_or_without_slash(api: APIClient, slash: str) -> None:
    created = create(api).json()
    assert (
        api.post(
            f"/workflows{slash}", {"name": "second", "definition": ONE_NODE}, format="json"
        ).status_code
        == 201
    )
    for ref in (created["id"], "onboarding"):
        response = api.get(f"/workflows/{ref}{slash}")
        assert response.status_code == 200, response.content
        assert response.json() == created
    listed = api.get(f"/workflows{slash}").json()
    assert [w["name"] for w in listed["results"]] == ["onboarding", "second"]
    versions = api.get(f"/workflows/onboarding/versions{slash}")
    assert [v["version"] for v in versions.json()["results"]] == [1]


def test_list_is_paginated(api: APIClient) -> None:
    for name in ("a-flow", "b-flow", "c-flow"):
        assert create(api, name=name, definition=ONE_NODE).status_code == 201
    first = api.get("/workflows?limit=2").json()
    assert set(first) >= {"next", "previous", "results"}
    assert [w["name"] for w in first["results"]] == ["a-flow", "b-flow"]
    assert first["previous"] is None
    assert first["next"]
    assert first["results"][0]["latest_version"] == 1
    assert first["results"][0]["definition"] == ONE_NODE
    second = api.get(first["next"]).json()
    assert [w["name"] for w in second["results"]] == ["c-flow"]
    assert second["next"] is None
    assert second["previous"]


@pytest.mark.parametrize("slash", ["", "/"])
def test_versions_are_numbered_and_listed_oldest_first(api: APIClient, slash: str) -> None:
    workflow_id = create(api).json()["id"]
    response = api.post(
        f"/workflows/{workflow_id}/versions{slash}", {"definition": ONE_NODE}, format="json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == {"workflow_id", "version", "definition", "created_at", "created_by"}
    assert body["created_by"] == "operator"
    assert (body["workflow_id"], body["version"], body["definition"]) == (workflow_id, 2, ONE_NODE)
    by_name = api.post("/workflows/onboarding/versions", {"definition": DEFINITION}, format="json")
    assert by_name.json()["version"] == 3
    listed = api.get(f"/workflows/{workflow_id}/versions{slash}").json()["results"]
    assert [v["version"] for v in listed] == [1, 2, 3]
    assert listed[1]["definition"] == ONE_NODE
    detail = api.get(f"/workflows/{workflow_id}").json()
    assert (detail["latest_version"], detail["definition"]) == (3, DEFINITION)
    assert WorkflowVersion.objects.get(workflow_id=workflow_id, version=1).definition == DEFINITION


@pytest.mark.parametrize(
    "path",
    [
        "/workflows/999999",
        "/workflows/no-such-flow",
        "/workflows/99999999999999999999999999",
        "/workflows/%C2%B2",
        "/workflows/no-such-flow/versions",
    ],
)
def test_unknown_workflows_are_404(api: APIClient, path: str) -> None:
    response = api.get(path)
    assert response.status_code == 404
    assert "detail" in response.json()
    posted = api.post("/workflows/no-such-flow/versions", {"definition": ONE_NODE}, format="json")
    assert posted.status_code == 404


def test_duplicate_name_is_400_naming_name(api: APIClient) -> None:
    assert create(api).status_code == 201
    response = create(api, definition=ONE_NODE)
    assert response.status_code == 400
    body = response.json()
    assert "already exists" in body["name"][0]
    assert "name" in body["detail"]
    assert "versions" in body["detail"]
    assert WorkflowDefinition.objects.count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"definition": ONE_NODE}, "name"),
        ({"name": "Has Spaces", "definition": ONE_NODE}, "name"),
        ({"name": "x" * 101, "definition": ONE_NODE}, "name"),
        ({"name": ["list"], "definition": ONE_NODE}, "name"),
        ({"name": "flow"}, "definition"),
        ({"name": "flow", "definition": None}, "definition"),
        ({"name": "flow", "definition": ONE_NODE, "description": {"x": 1}}, "description"),
    ],
)
def test_bad_create_requests_are_400_naming_the_field(
    api: APIClient, body: dict[str, Any], field: str
) -> None:
    response = api.post("/workflows", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert response.json()["detail"]
    assert WorkflowDefinition.objects.count() == 0


def _with(node_index: int, **fields: Any) -> dict[str, Any]:
    definition = copy.deepcopy(DEFINITION)
    definition["nodes"][node_index].update(fields)
    return definition


INVALID_DEFINITIONS = [
    pytest.param(
        _with(0, depends_on=["team"]),
        "verify",
        "depends_on",
        "cycle: verify -> workspace -> cool_off -> team -> verify",
        id="cycle",
    ),
    pytest.param(
        _with(3, depends_on=["cool_off", "sms"]),
        "email",
        "depends_on[1]",
        "unknown node 'sms'",
        id="unknown-dependency",
    ),
    pytest.param(_with(3, type="email"), "email", "type", "unknown type 'email'", id="type"),
    pytest.param(
        _with(4, function="acme.create_team"),
        "team",
        "function",
        "unknown function 'acme.create_team'",
        id="unknown-function",
    ),
    pytest.param(
        _with(0, input={"user": "{{ input.user_id[ }}"}),
        "verify",
        "input.user",
        "invalid expression",
        id="template-syntax",
    ),
    pytest.param(
        _with(3, input="{{ nodes.team.output }}"),
        "email",
        "input",
        "not upstream of 'email': add it to depends_on",
        id="template-not-upstream",
    ),
    pytest.param(_with(4, id="email"), "email", "id", "duplicate id 'email'", id="duplicate-id"),
    pytest.param(
        _with(2, retry_policy={"max_attempts": 0}),
        "cool_off",
        "retry_policy.max_attempts",
        "integer",
        id="policy",
    ),
    pytest.param([1, 2], None, None, "JSON object", id="not-an-object"),
    pytest.param({"nodes": []}, None, "nodes", "non-empty list", id="no-nodes"),
]


@pytest.mark.parametrize(("definition", "node", "field", "message"), INVALID_DEFINITIONS)
def test_invalid_definition_is_400_naming_node_and_field(
    api: APIClient, definition: Any, node: str | None, field: str | None, message: str
) -> None:
    response = create(api, definition=definition)
    assert response.status_code == 400, response.content
    body = response.json()
    assert "Invalid definition" in body["detail"]
    assert message in body["detail"]
    assert any(
        e["node"] == node and e["field"] == field and message in e["message"]
        for e in body["errors"]
    ), body["errors"]
    assert WorkflowDefinition.objects.count() == 0

    workflow_id = create(api, name="valid", definition=ONE_NODE).json()["id"]
    version = api.post(
        f"/workflows/{workflow_id}/versions", {"definition": definition}, format="json"
    )
    assert version.status_code == 400
    assert version.json()["errors"] == body["errors"]
    assert WorkflowVersion.objects.filter(workflow_id=workflow_id).count() == 1


def test_every_problem_of_a_definition_is_reported(api: APIClient) -> None:
    definition = _with(3, type="email", depends_on=["sms"])
    definition["output"] = "{{ nodes.nope.output }}"
    errors = create(api, definition=definition).json()["errors"]
    assert {(e["node"], e["field"]) for e in errors} >= {
        ("email", "type"),
        ("email", "depends_on[0]"),
        (None, "output"),
    }


@pytest.mark.parametrize(
    "content",
    ['{"name": "x", "definition": ', "{'name': 'x'}", "\xff\xfe", '{"n": NaN}', "not json"],
)
def test_malformed_json_is_400(api: APIClient, content: str) -> None:
    response = post_raw(api, "/workflows", content.encode("latin-1"))
    assert response.status_code == 400, response.content
    assert "JSON parse error" in response.json()["detail"]


@pytest.mark.parametrize("content", ["[1, 2]", '"onboarding"', "null", "3"])
def test_non_object_body_is_400(api: APIClient, content: str) -> None:
    for path in ("/workflows", "/workflows/valid/versions"):
        if path.endswith("versions"):
            create(api, name="valid", definition=ONE_NODE)
        response = post_raw(api, path, content)
        assert response.status_code == 400, (path, response.content)
        assert response.json()["detail"]


def test_deeply_nested_body_is_400(api: APIClient) -> None:
    response = post_raw(api, "/workflows", "[" * 100_000 + "]" * 100_000)
    assert response.status_code == 400
    assert response.json()["detail"]


def test_deeply_nested_definition_is_400(api: APIClient) -> None:
    nested = "[" * 500 + "]" * 500
    content = (
        f'{{"name": "deep", "definition": {{"nodes": [{{"id": "a", "type": "function", '
        f'"function": "std.echo", "input": {nested}}}]}}}}'
    )
    response = post_raw(api, "/workflows", content)
    assert response.status_code == 400, response.content[:300]
    assert "nested more than" in response.json()["errors"][0]["message"]


def test_body_too_large_is_413(api: APIClient, settings) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2048
    padding = "x" * 4096
    body = json.dumps({"name": "big", "description": padding, "definition": ONE_NODE})
    response = post_raw(api, "/workflows", body)
    assert response.status_code == 413
    assert "2048 bytes" in response.json()["detail"]
    small = create(api, name="small", definition=ONE_NODE)
    assert small.status_code == 201
    too_big_version = post_raw(
        api, "/workflows/small/versions", json.dumps({"definition": ONE_NODE, "p": padding})
    )
    assert too_big_version.status_code == 413
    assert WorkflowDefinition.objects.filter(name="big").count() == 0


def test_only_json_bodies_are_accepted(api: APIClient) -> None:
    # Forms and multipart were accepted before; only JSON now (a multipart file part
    # would be streamed past the body size limit).
    form = api.post("/workflows", {"name": "form", "definition": "{}"})
    assert form.status_code == 415
    assert form.json()["detail"]
    multipart = api.post("/workflows", {"name": "form", "definition": "{}"}, format="multipart")
    assert multipart.status_code == 415
    assert multipart.json()["detail"]
    text = api.generic("POST", "/workflows", "hello", content_type="text/plain")
    assert text.status_code == 415
    assert text.json()["detail"]
    assert not WorkflowDefinition.objects.filter(name="form").exists()
