"""The executions REST API without workers: starting, reading, errors."""

from __future__ import annotations

import uuid

import pytest
from rest_framework.test import APIClient

from executions.models import Event, Execution
from tests.factories import make_version

pytestmark = pytest.mark.django_db

TWO_STEP = {
    "nodes": [
        {"id": "a", "type": "function", "function": "std.echo", "input": {"x": "{{ input.x }}"}},
        {"id": "b", "type": "function", "function": "std.noop", "depends_on": ["a"]},
    ]
}


@pytest.fixture
def version():
    return make_version(TWO_STEP, name="two-step")


def test_start_by_name_schedules_the_root_node(api: APIClient, version) -> None:
    response = api.post("/executions", {"workflow": "two-step", "input": {"x": 1}}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "running"
    assert body["version"] == 1
    assert body["input"] == {"x": 1}
    assert body["workflow_id"] == version.workflow_id
    assert body["replay_of"] is None
    types = list(Event.objects.filter(execution_id=body["id"]).values_list("type", "node_id"))
    assert types == [("workflow_started", None), ("task_scheduled", "a")]
    tasks = api.get(f"/executions/{body['id']}/tasks/").json()["results"]
    assert [(t["node_id"], t["status"], t["input"]) for t in tasks] == [
        ("a", "scheduled", {"x": 1}),
        ("b", "pending", None),
    ]


def test_start_by_id_and_pinned_version(api: APIClient, version) -> None:
    response = api.post(
        "/executions/", {"workflow": version.workflow_id, "version": 1}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["version"] == 1


def test_idempotency_key_returns_the_same_execution(api: APIClient, version) -> None:
    body = {"workflow": "two-step", "input": {"x": 2}}
    first = api.post("/executions", body, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    second = api.post("/executions", body, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == second.status_code == 201
    assert first.json()["id"] == second.json()["id"]
    assert Execution.objects.count() == 1
    other = api.post(
        "/executions", {**body, "input": {"x": 3}}, format="json", HTTP_IDEMPOTENCY_KEY="k-1"
    )
    assert other.status_code == 409
    assert "Idempotency-Key" in other.json()["detail"]


def test_a_number_names_a_workflow_by_id_before_a_workflow_by_that_name(api, version) -> None:
    """`"workflow": "<digits>"` is an id first, a name only when no workflow has that id."""
    named = make_version(TWO_STEP, name=str(version.workflow_id))
    by_id = api.post("/executions", {"workflow": str(version.workflow_id)}, format="json")
    assert by_id.status_code == 201, by_id.content
    assert by_id.json()["workflow_id"] == version.workflow_id
    by_name = api.post("/executions", {"workflow": str(named.workflow_id + 1000)}, format="json")
    assert by_name.status_code == 400
    other = make_version(TWO_STEP, name=str(named.workflow_id + 1000))
    by_name = api.post("/executions", {"workflow": str(named.workflow_id + 1000)}, format="json")
    assert by_name.status_code == 201, by_name.content
    assert by_name.json()["workflow_id"] == other.workflow_id
    pinned = api.post(
        "/executions", {"workflow": str(version.workflow_id), "version": 2}, format="json"
    )
    assert pinned.status_code == 400
    assert f"Workflow '{version.workflow.name}' has no version 2." in str(pinned.json())


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "workflow"),
        ({"workflow": "no-such-workflow"}, "workflow"),
        ({"workflow": 999999}, "workflow"),
        ({"workflow": True}, "workflow"),
        ({"workflow": ["two-step"]}, "workflow"),
        ({"workflow": "two-step", "version": 7}, "version"),
        ({"workflow": "two-step", "version": "x"}, "version"),
        ({"workflow": "two-step", "start_at": "yesterday"}, "start_at"),
    ],
)
def test_bad_start_requests_are_400_naming_the_field(api, version, body, field) -> None:
    response = api.post("/executions", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert Execution.objects.count() == 0


def test_reads_list_detail_and_events(api: APIClient, version) -> None:
    ids = [
        api.post("/executions", {"workflow": "two-step"}, format="json").json()["id"]
        for _ in range(2)
    ]
    listed = api.get("/executions?status=running&workflow=two-step").json()
    assert {e["id"] for e in listed["results"]} == set(ids)
    assert api.get("/executions?status=succeeded").json()["results"] == []
    assert api.get("/executions?status=bogus").status_code == 400
    detail = api.get(f"/executions/{ids[0]}").json()
    assert detail["id"] == ids[0]
    for key in (
        "workflow_id",
        "version",
        "status",
        "input",
        "output",
        "error",
        "created_at",
        "started_at",
        "ended_at",
        "replay_of",
        "parent_execution_id",
    ):
        assert key in detail
    events = api.get(f"/executions/{ids[0]}/events").json()["results"]
    assert [e["seq"] for e in events] == [1, 2]
    assert set(events[0]) >= {"seq", "type", "node_id", "attempt", "data", "timestamp"}
    tail = api.get(f"/executions/{ids[0]}/events?after_seq=1").json()["results"]
    assert [e["seq"] for e in tail] == [2]
    assert api.get(f"/executions/{ids[0]}/events?after_seq=x").status_code == 400
    one = api.get(f"/executions/{ids[0]}/tasks/a").json()
    assert one["node_id"] == "a"
    assert [e["type"] for e in one["events"]] == ["task_scheduled"]
    assert one["attempt_history"][0]["status"] == "scheduled"


def test_unknown_ids_are_404(api: APIClient) -> None:
    missing = uuid.uuid4()
    assert api.get(f"/executions/{missing}").status_code == 404
    assert api.get(f"/executions/{missing}/tasks").status_code == 404
    assert api.get(f"/executions/{missing}/events").status_code == 404
    assert api.get("/executions/not-a-uuid").status_code == 404


def test_anonymous_requests_get_401() -> None:
    client = APIClient()
    for path in ("/executions", f"/executions/{uuid.uuid4()}", "/workflows"):
        assert client.get(path).status_code == 401
    assert client.post("/executions", {}, format="json").status_code == 401
