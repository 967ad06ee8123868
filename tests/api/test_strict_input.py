"""Strict input: every query parameter and body field is parsed to exactly
what the schema documents; anything else is a 400 naming it, never a 500 and never a
silent fallback. Only JSON bodies; every list has a capped page size."""

from __future__ import annotations

import pytest
from django.test import override_settings

from executions.models import Execution
from tests.factories import start
from workflows.rest.pagination import LogPage, Page

pytestmark = pytest.mark.django_db

DEFINITION = {"nodes": [{"id": "review", "type": "approval"}]}


@pytest.fixture
def execution(db) -> Execution:
    return start(DEFINITION)


BAD_NUMBERS = ["²", "٣", "¹0", " 1", "1 ", "+1", "-1", "1.0", "1e3", "0x10", "x", "", "9" * 5000]


@pytest.mark.parametrize("raw", BAD_NUMBERS)
@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("{e}/state", "at_seq"),
        ("{e}/events", "after_seq"),
        ("{e}/events", "limit"),
        ("{e}/events", "offset"),
        ("{e}/tasks", "limit"),
        ("/executions", "limit"),
        ("/workflows", "offset"),
        ("/schedules", "limit"),
    ],
)
def test_numbers_are_ascii_digits_in_range_or_400(api, execution, path, name, raw) -> None:
    response = api.get(path.format(e=f"/executions/{execution.pk}"), {name: raw})
    assert response.status_code == 400, (name, raw, response.content[:200])
    assert name in response.json()
    assert response.json()["detail"]


def test_page_sizes_are_capped_and_the_cap_is_a_400_past_it(api, execution) -> None:
    e = f"/executions/{execution.pk}"
    for path, cap in (("/executions", Page.max_limit), (f"{e}/events", LogPage.max_limit)):
        assert api.get(path, {"limit": cap}).status_code == 200
        too_many = api.get(path, {"limit": cap + 1})
        assert too_many.status_code == 400
        assert f"to {cap}" in too_many.json()["limit"][0]
    assert api.get("/executions", {"limit": "0"}).status_code == 400
    assert api.get("/executions", {"offset": 2**31}).status_code == 400
    assert api.get(f"{e}/state", {"at_seq": "0002"}).json()["at_seq"] == 2
    assert api.get(f"{e}/state", {"at_seq": 999}).status_code == 400  # past the log's end


def test_filters_are_checked(api, execution) -> None:
    assert api.get("/executions", {"status": ""}).status_code == 400
    assert api.get("/executions", {"status": "RUNNING"}).status_code == 400
    assert api.get("/executions", {"workflow": "w" * 101}).status_code == 400
    only_review = api.get(f"/executions/{execution.pk}/events", {"node_id": "review"}).json()
    assert only_review["results"]
    assert {e["node_id"] for e in only_review["results"]} == {"review"}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"workflow": "1" * 5000}, "workflow"),
        ({"workflow": 2**63}, "workflow"),
        ({"workflow": 0}, "workflow"),
        ({"workflow": 1.5}, "workflow"),
        ({"workflow": "Not A Slug"}, "workflow"),
        ({"workflow": "wf", "version": "1"}, "version"),
        ({"workflow": "wf", "version": 1.0}, "version"),
        ({"workflow": "wf", "version": True}, "version"),
        ({"workflow": "wf", "version": 2**31}, "version"),
        ({"workflow": "wf", "start_at": "9999-12-31T23:59:59-23:59"}, "start_at"),
        ({"workflow": "wf", "start_at": "2999-01-01T00:00:00Z"}, "start_at"),
        ({"workflow": "wf", "start_at": 1700000000}, "start_at"),
    ],
)
def test_start_fields_are_typed_and_bounded(api, body, field) -> None:
    response = api.post("/executions", body, format="json")
    assert response.status_code == 400, response.content[:300]
    assert field in response.json(), response.json()


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/workflows", {"name": 5, "definition": DEFINITION}, "name"),
        ("/workflows", {"name": "ok", "description": 5, "definition": DEFINITION}, "description"),
        ("/workflows", {"name": "ok", "description": "d" * 10_001, "definition": DEFINITION},
         "description"),
        ("/schedules", {"workflow": "wf", "cron": 5}, "cron"),
        ("/schedules", {"workflow": "wf", "cron": "* * * * *", "enabled": "yes"}, "enabled"),
        ("/schedules", {"workflow": "wf", "cron": "* * * * *", "enabled": 1}, "enabled"),
        ("/schedules", {"workflow": "1" * 5000, "cron": "* * * * *"}, "workflow"),
        ("/triggers", {"name": 0, "event": "e", "workflow": "wf"}, "name"),
        ("{e}/retry", {"node_id": 5}, "node_id"),
        ("{e}/replay", {"from_node": ["a"]}, "from_node"),
        ("{e}/tasks/review/approve", {"comment": 5}, "comment"),
    ],
)  # fmt: skip
def test_body_fields_take_only_their_documented_type(api, execution, path, body, field) -> None:
    response = api.post(path.format(e=f"/executions/{execution.pk}"), body, format="json")
    assert response.status_code == 400, response.content[:300]
    assert field in response.json(), response.json()


def test_idempotency_key_is_bounded(api, execution) -> None:
    body = {"workflow": execution.workflow_id}
    response = api.post("/executions", body, format="json", HTTP_IDEMPOTENCY_KEY="k" * 256)
    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()


@pytest.mark.parametrize("fmt", ["multipart", None])
def test_forms_and_multipart_are_415_even_when_large(api, execution, fmt, settings) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    body = {"workflow": str(execution.workflow_id), "input": "x" * 50_000}
    response = api.post("/executions", body, format=fmt) if fmt else api.post("/executions", body)
    assert response.status_code == 415, response.content[:200]
    assert Execution.objects.count() == 1


@override_settings(WORKFLOW_API_TASK_DETAIL_ITEMS=1)
def test_task_detail_keeps_the_latest_events_and_attempts(api, execution) -> None:
    e = f"/executions/{execution.pk}"
    assert api.post(f"{e}/tasks/review/approve", {}, format="json").status_code == 202
    everything = api.get(f"{e}/events", {"node_id": "review"}).json()["results"]
    body = api.get(f"{e}/tasks/review").json()
    assert len(everything) > 1, "the node needs more events than the cap for this test"
    assert body["events_total"] == len(everything)
    assert len(body["events"]) == 1
    assert body["events"][0]["seq"] == everything[-1]["seq"]
    assert body["attempts_total"] == len(body["attempt_history"])  # an approval: no attempts


def test_unknown_paths_are_json_404s(api) -> None:
    for path in ("/executions/not-a-uuid", "/nothing-here", "/executions/1/events"):
        response = api.get(path)
        assert response.status_code == 404
        assert response["Content-Type"] == "application/json"
        assert response.json()["detail"]
