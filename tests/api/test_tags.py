"""Tags on POST /executions: checked (400 naming the problem), shown, recorded in
workflow_started, filtered by ?tag=<key>:<value> (every one must hold), found by the
admin's search, and taken by workflows.api.start."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from executions.models import Event, Execution
from tests.factories import make_version
from workflows import api as engine

pytestmark = pytest.mark.django_db

ONE = {"nodes": [{"id": "a", "type": "function", "function": "std.echo"}]}


@pytest.fixture(autouse=True)
def version():
    return make_version(ONE, name="tagged")


def started(api: APIClient, tags: object, **headers: str) -> dict:
    response = api.post(
        "/executions", {"workflow": "tagged", "tags": tags}, format="json", headers=headers
    )
    assert response.status_code == 201, response.content
    return response.json()


def test_tags_are_shown_recorded_and_verified(api: APIClient) -> None:
    body = started(api, {"team": "billing", "env": "prod"})
    assert body["tags"] == {"team": "billing", "env": "prod"}
    assert api.get(f"/executions/{body['id']}").json()["tags"] == body["tags"]
    first = Event.objects.get(execution_id=body["id"], type="workflow_started")
    assert first.data["tags"] == {"team": "billing", "env": "prod"}
    call_command("verify_logs", body["id"])  # the stored tags agree with the log


def test_no_tags_is_an_empty_object_and_nothing_recorded(api: APIClient) -> None:
    body = started(api, None)
    assert body["tags"] == {}
    first = Event.objects.get(execution_id=body["id"], type="workflow_started")
    assert "tags" not in first.data


@pytest.mark.parametrize(
    ("tags", "problem"),
    [
        (["team"], "must be an object of strings"),
        ("team:billing", "must be an object of strings"),
        ({f"k{i}": "v" for i in range(17)}, "at most 16 tags (got 17)"),
        ({"team": 7}, "tag 'team': the value must be a string (got int)"),
        ({"team": None}, "tag 'team': the value must be a string (got null)"),
        ({"team": "x" * 129}, "tag 'team': the value is 129 characters, at most 128"),
        ({"k" * 129: "v"}, "the key is 129 characters, at most 128"),
        ({"": "v"}, "a tag's key must not be empty"),
        ({"a:b": "v"}, "tag 'a:b': a key may not contain ':'"),
    ],
)
def test_bad_tags_are_a_400_naming_the_problem(api: APIClient, tags: object, problem: str) -> None:
    response = api.post("/executions", {"workflow": "tagged", "tags": tags}, format="json")
    assert response.status_code == 400, response.content
    assert problem in response.json()["tags"][0]
    assert not Execution.objects.exists()


def test_sixteen_tags_of_128_characters_are_fine(api: APIClient) -> None:
    tags = {f"{i:02d}".ljust(128, "k"): "v" * 128 for i in range(16)}
    assert started(api, tags)["tags"] == tags


def test_the_list_filters_on_every_tag_given(api: APIClient) -> None:
    both = started(api, {"team": "billing", "env": "prod"})["id"]
    started(api, {"team": "billing", "env": "test"})
    started(api, {"team": "search", "env": "prod"})
    started(api, {})

    def listed(*tags: str) -> list[str]:
        query = "&".join(f"tag={t}" for t in tags)
        response = api.get(f"/executions?{query}")
        assert response.status_code == 200, response.content
        return [e["id"] for e in response.json()["results"]]

    assert listed("team:billing", "env:prod") == [both]
    assert len(listed("team:billing")) == 2
    assert len(listed("env:prod")) == 2
    assert listed("team:billing", "team:search") == []  # one key, two values
    assert listed("team:nobody") == []
    assert listed("note:a:b") == []  # the value is all after the first ':'


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ("tag=team", "'team' is not <key>:<value>"),
        ("tag=", "Empty"),
        (":billing", None),
    ],
)
def test_a_bad_tag_filter_is_a_400(api: APIClient, query: str, problem: str | None) -> None:
    if problem is None:
        query, problem = "tag=:billing", "a tag's key must not be empty"
    response = api.get(f"/executions?{query}")
    assert response.status_code == 400, response.content
    assert problem in str(response.json()["tag"])


def test_the_same_key_with_other_tags_is_a_conflict(api: APIClient) -> None:
    first = started(api, {"team": "billing"}, **{"Idempotency-Key": "tagged-1"})
    again = started(api, {"team": "billing"}, **{"Idempotency-Key": "tagged-1"})
    assert again["id"] == first["id"]
    response = api.post(
        "/executions",
        {"workflow": "tagged", "tags": {"team": "search"}},
        format="json",
        headers={"Idempotency-Key": "tagged-1"},
    )
    assert response.status_code == 409, response.content


def test_the_admin_finds_an_execution_by_tag(admin_client, api: APIClient) -> None:
    wanted = started(api, {"team": "billing"})["id"]
    started(api, {"team": "search"})
    page = admin_client.get("/admin/executions/execution/", {"q": "team:billing"})
    assert page.status_code == 200
    text = page.content.decode()
    assert wanted[:8] in text
    assert "team:billing" in text
    assert "team:search" not in text
    page = admin_client.get(f"/admin/executions/execution/{wanted}/change/")
    assert page.status_code == 200
    assert '<span class="wf-badge">team:billing</span>' in page.content.decode()


def test_the_python_api_takes_and_checks_tags() -> None:
    handle = engine.start("tagged", tags={"team": "billing"})
    assert handle.tags == {"team": "billing"}
    assert Execution.objects.get(pk=handle.id).tags == {"team": "billing"}
    with pytest.raises(engine.InvalidInput, match="tags: tag 'team': the value must be a string"):
        engine.start("tagged", tags={"team": 1})  # type: ignore[dict-item]
    assert Execution.objects.count() == 1


def test_on_postgresql_the_filter_is_one_containment_test() -> None:
    """`tags @> {...}`: what the GIN index (jsonb_path_ops) on tags answers."""
    from django.db import connection

    from executions.tags import with_tags

    sql = str(with_tags(Execution.objects.all(), [("team", "a"), ("env", "b")]).query)
    if connection.vendor == "postgresql":
        assert sql.count("@>") == 1
        with connection.cursor() as cursor:
            cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'execution_tags_gin'")
            (definition,) = cursor.fetchone()
        assert "gin (tags jsonb_path_ops)" in definition
    else:
        assert "@>" not in sql


def test_the_schema_documents_tags_and_the_repeatable_filter() -> None:
    schema = APIClient().get("/schema", {"format": "json"}).json()
    (tag,) = [p for p in schema["paths"]["/executions"]["get"]["parameters"] if p["name"] == "tag"]
    assert tag["schema"]["type"] == "array"
    assert tag.get("explode", True) is True  # ?tag=a:1&tag=b:2
    create = schema["components"]["schemas"]["ExecutionCreateRequest"]["properties"]["tags"]
    assert create["maxProperties"] == 16
    assert create["additionalProperties"] == {"type": "string", "maxLength": 128}
    shown = schema["components"]["schemas"]["Execution"]["properties"]
    assert shown["tags"]["maxProperties"] == 16
    assert shown["deadline_at"]["nullable"] is True
