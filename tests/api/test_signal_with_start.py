"""Signal-with-start through the API: POST /executions with an Idempotency-Key and a
`signal` starts the execution with the signal waiting for its node (201), then signals
the same execution (200) while it runs; a clear 400 or 409 for what cannot be done."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from rest_framework.test import APIClient

from executions.models import Event, Execution
from executions.services.control import execution_cancel
from tests.factories import make_version
from tests.integration.engine import assert_replayable

pytestmark = pytest.mark.django_db

DEFINITION = {
    "nodes": [
        {"id": "first", "type": "signal", "signal": "order"},
        {"id": "second", "type": "signal", "signal": "order", "depends_on": ["first"]},
        {"id": "third", "type": "signal", "signal": "order", "depends_on": ["second"]},
    ]
}


@pytest.fixture
def client(user) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


@pytest.fixture
def workflow() -> str:
    return make_version(DEFINITION).workflow.name


def post(client: APIClient, body: dict[str, Any], key: str | None) -> Any:
    if key is None:
        return client.post("/executions", body, format="json")
    return client.post("/executions", body, format="json", HTTP_IDEMPOTENCY_KEY=key)


def signalled(execution_id: str) -> list[Any]:
    rows = Event.objects.filter(execution_id=execution_id, type="signal_received")
    return [(e.node_id, e.data["data"]) for e in rows.order_by("seq")]


def test_the_first_starts_with_its_signal_the_next_signal_the_same_execution(
    client, workflow
) -> None:
    key = uuid.uuid4().hex
    body = {"workflow": workflow, "signal": {"name": "order", "data": 1}}
    first = post(client, body, key)
    assert first.status_code == 201, first.content
    second = post(client, {**body, "signal": {"name": "order", "data": 2}}, key)
    assert second.status_code == 200, second.content
    assert second.json()["id"] == first.json()["id"]
    assert Execution.objects.filter(idempotency_key=key).count() == 1
    assert signalled(first.json()["id"]) == [(None, 1), ("first", 1), (None, 2), ("second", 2)]


def test_without_an_idempotency_key_it_is_a_400_naming_the_header(client, workflow) -> None:
    answer = post(client, {"workflow": workflow, "signal": {"name": "order"}}, None)
    assert answer.status_code == 400, answer.content
    assert "Idempotency-Key" in answer.json()["signal"][0]
    assert not Execution.objects.filter(workflow__name=workflow).exists()


def test_a_signal_no_node_waits_for_is_a_400_naming_the_ones_that_do(client, workflow) -> None:
    answer = post(client, {"workflow": workflow, "signal": {"name": "refund"}}, uuid.uuid4().hex)
    assert answer.status_code == 400, answer.content
    assert "waits for order" in answer.json()["signal"]["name"][0]
    assert not Execution.objects.filter(workflow__name=workflow).exists()


@pytest.mark.parametrize(
    "signal",
    [{}, {"name": 3}, {"data": 1}, "order", None],
)
def test_a_malformed_signal_is_a_400(client, workflow, signal: Any) -> None:
    answer = post(client, {"workflow": workflow, "signal": signal}, uuid.uuid4().hex)
    assert answer.status_code == 400, answer.content
    assert "signal" in answer.json()


def test_the_key_of_an_ended_execution_is_a_409_and_records_nothing(client, workflow) -> None:
    key = uuid.uuid4().hex
    body = {"workflow": workflow, "signal": {"name": "order", "data": 1}}
    started = post(client, body, key).json()["id"]
    execution_cancel(execution_id=started)
    assert Execution.objects.get(pk=started).status == "cancelled"
    before = signalled(started)
    answer = post(client, body, key)
    assert answer.status_code == 409, answer.content
    assert "has already cancelled" in answer.json()["detail"]
    assert signalled(started) == before
    assert_replayable(Execution.objects.get(pk=started))


def test_the_key_of_another_request_is_a_409(client, workflow) -> None:
    key = uuid.uuid4().hex
    body = {"workflow": workflow, "signal": {"name": "order"}}
    assert post(client, body, key).status_code == 201
    answer = post(client, {**body, "input": {"other": True}}, key)
    assert answer.status_code == 409, answer.content
    assert "already used for a different request" in answer.json()["detail"]


def test_the_schema_documents_signal_with_start_and_the_parked_task_actions() -> None:
    schema = APIClient().get("/schema", {"format": "json"}).json()
    start = schema["paths"]["/executions"]["post"]
    assert {"200", "201", "400", "409"} <= set(start["responses"])
    body = schema["components"]["schemas"]["ExecutionCreateRequest"]["properties"]
    assert "signal" in body
    signal = schema["components"]["schemas"]["StartSignalRequest"]
    assert signal["required"] == ["name"]
    for action in ("retry", "fail"):
        operation = schema["paths"][f"/executions/{{execution_id}}/tasks/{{node_id}}/{action}"]
        assert {"202", "404", "409"} <= set(operation["post"]["responses"])
    policy = schema["components"]["schemas"]["RetryPolicy"]["properties"]
    assert policy["on_exhausted"]["enum"] == ["fail", "park"]


def test_the_start_keeps_its_tags_and_a_signal_with_the_same_tags_is_the_same_request(
    client, workflow
) -> None:
    key = uuid.uuid4().hex
    body = {"workflow": workflow, "tags": {"team": "billing"}, "signal": {"name": "order"}}
    first = post(client, body, key)
    assert first.status_code == 201, first.content
    assert first.json()["tags"] == {"team": "billing"}
    assert Execution.objects.get(pk=first.json()["id"]).tags == {"team": "billing"}
    again = post(client, body, key)
    assert again.status_code == 200, again.content
    assert again.json()["id"] == first.json()["id"]
