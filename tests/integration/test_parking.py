"""retry_policy.on_exhausted "park" on real workers: a node out of attempts waits parked
until POST .../tasks/{node_id}/retry (another round: here it succeeds) or /fail (the
execution fails and compensations run, as without parking)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from executions.models import Task
from tests.factories import events, start, timeline
from tests.integration.engine import assert_replayable, wait_for
from tests.integration.test_control import Switchable
from tests.servers import http_server
from workflows import api as engine_api

PARK = {"max_attempts": 2, "initial_interval_seconds": 0.2, "on_exhausted": "park"}
UNDO = {"type": "function", "function": "std.echo", "input": "undo"}


def operator() -> APIClient:
    user = get_user_model().objects.create_superuser(f"op-{uuid.uuid4().hex[:8]}")
    client = APIClient()
    client.force_authenticate(user)
    return client


def chain(first: dict[str, Any]) -> dict[str, Any]:
    return {
        "retry_policy": PARK,
        "nodes": [
            {"id": "book", "type": "function", "function": "std.echo", "compensation": UNDO},
            {**first, "id": "charge", "depends_on": ["book"]},
            {"id": "ship", "type": "function", "function": "std.echo", "depends_on": ["charge"]},
        ],
    }


def test_a_parked_node_retried_succeeds_in_the_same_execution(live) -> None:
    switch = Switchable()
    with http_server(switch) as server:
        url = f"{server.url}/charge"
        execution = start(chain({"type": "http", "request": {"method": "POST", "url": url}}))
        wait_for(execution, "charge", "parked")
        execution.refresh_from_db()
        assert execution.status == "running"
        assert server.hits("/charge") == 2
        (parked,) = events(execution, "task_parked", "charge")
        assert parked.data["attempts"] == 2, parked.data
        client = operator()
        why = client.get(f"/executions/{execution.pk}/tasks/charge/why").json()
        assert why["status"] == "parked"
        assert [r["code"] for r in why["reasons"]] == ["parked"]
        # Wrong node or wrong state: a clear 404 / 409, never a 500.
        assert client.post(f"/executions/{execution.pk}/tasks/nope/retry").status_code == 404
        refused = client.post(f"/executions/{execution.pk}/tasks/book/fail")
        assert refused.status_code == 409, refused.content
        assert "not parked" in refused.json()["detail"]
        switch.fixed = True
        answer = client.post(f"/executions/{execution.pk}/tasks/charge/retry")
        assert answer.status_code == 202, answer.content
        done = live.wait(execution.pk)
    assert done.status == "succeeded", timeline(done)
    charge = Task.objects.get(execution=done, node_id="charge")
    assert (charge.status, charge.attempts) == ("succeeded", 3)
    (unparked,) = events(done, "task_unparked", "charge")
    assert unparked.data["action"] == "retry"
    assert unparked.data["by"].startswith("op-")
    assert server.hits("/charge") == 3
    assert_replayable(done)


def test_a_parked_node_failed_fails_the_execution_and_compensations_run(live) -> None:
    failing = {"type": "function", "function": "std.fail",
               "input": {"message": "card declined", "retryable": True}}  # fmt: skip
    execution = start(chain(failing))
    wait_for(execution, "charge", "parked")
    handle = engine_api.get(execution.pk)
    assert handle.status == "running"
    with pytest.raises(engine_api.NotAllowed, match="not parked"):
        handle.retry_task("book")
    with pytest.raises(engine_api.UnknownNode):
        handle.fail_task("nope")
    handle.fail_task("charge", by="ann")
    done = live.wait(execution.pk)
    assert done.status == "failed", timeline(done)
    assert done.error["nodes"] == ["charge"]
    assert "card declined" in done.error["cause"]["message"]
    compensation = Task.objects.get(execution=done, node_id="book.compensation")
    assert compensation.status == "succeeded"
    assert Task.objects.get(execution=done, node_id="ship").status == "skipped"
    (unparked,) = events(done, "task_unparked", "charge")
    assert unparked.data == {"action": "fail", "by": "ann"}
    assert_replayable(done)
