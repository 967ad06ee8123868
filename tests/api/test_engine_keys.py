"""Engine keys (schedule ticks, sub-workflow children) and client idempotency keys never
meet; sub-workflows nest only to the depth limit, and a version that would close a
workflow-to-workflow cycle is refused with a 400."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import IntegrityError, transaction
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from executions.models import Attempt, Execution
from executions.schedules.services import schedule_create
from executions.schedules.tasks import run_schedule
from executions.services.sweep import sweep
from executions.worker.runtime import run_task
from tests.factories import make_version, start
from workflows.testing import run

pytestmark = pytest.mark.django_db

ECHO = {"nodes": [{"id": "a", "type": "function", "function": "std.echo", "input": "{{ input }}"}]}
TICK = datetime(2025, 6, 1, 8, 5, tzinfo=UTC)


@pytest.fixture
def admin(django_user_model) -> APIClient:
    """A superuser's client: these tests are about keys and links, not permissions."""
    user = django_user_model.objects.create_superuser(username="root", password="pw-root")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def _post_execution(client: APIClient, workflow: str, key: str) -> dict:
    response = client.post(
        "/executions", {"workflow": workflow, "input": {}}, format="json", HTTP_IDEMPOTENCY_KEY=key
    )
    assert response.status_code == 201, response.content
    return response.json()


def test_a_client_key_shaped_like_a_schedule_tick_neither_takes_nor_suppresses_it(
    admin, monkeypatch
) -> None:
    version = make_version(ECHO, name="nightly")
    schedule = schedule_create(workflow=version.workflow, cron="*/5 * * * *")
    key = f"schedule:{schedule.pk}:{TICK.isoformat()}"
    taken = _post_execution(admin, "nightly", key)
    monkeypatch.setattr("workflows.clock.now", lambda: TICK)
    fired = run_schedule(str(schedule.pk))
    assert fired is not None
    assert fired != taken["id"]
    engine = Execution.objects.get(pk=fired)
    assert engine.engine_key == key
    assert engine.idempotency_key is None
    assert engine.created_by == f"schedule:{schedule.pk}"
    assert run_schedule(str(schedule.pk)) == fired  # the tick, redelivered: still one
    # The client's key still finds the client's execution, and only it.
    assert _post_execution(admin, "nightly", key)["id"] == taken["id"]
    client_run = Execution.objects.get(pk=taken["id"])
    assert client_run.idempotency_key == key
    assert client_run.engine_key is None
    assert Execution.objects.count() == 2


def test_a_client_key_shaped_like_a_child_key_does_not_match_the_child(admin) -> None:
    make_version(ECHO, name="leaf")
    parent = start({"nodes": [{"id": "sub", "type": "workflow", "workflow": "leaf"}]})
    run_task(Attempt.objects.get(execution=parent, node_id="sub").pk)
    child = Execution.objects.get(parent_execution=parent)
    key = f"child:{parent.pk}:sub:1"
    assert child.engine_key == key
    assert child.idempotency_key is None
    assert (child.parent_node_id, child.parent_attempt, child.depth) == ("sub", 1, 1)
    assert child.created_by == f"parent:{parent.pk}"
    posed = _post_execution(admin, "leaf", key)
    assert posed["id"] != str(child.pk)
    impostor = Execution.objects.get(pk=posed["id"])
    assert impostor.parent_execution_id is None
    assert impostor.depth == 0
    # The child is found through the foreign key, and only it answers the parent.
    run_task(Attempt.objects.get(execution=child).pk)
    child.refresh_from_db()
    assert child.status == "succeeded"
    # The notice its ending sent after commit is lost here: the sweeper finds the parked
    # parent attempt through the foreign key and records the child's output.
    assert sweep().notified == 1
    parent.refresh_from_db()
    assert parent.status == "succeeded", parent.error


def test_a_child_past_the_depth_limit_fails_its_node_without_retry(settings) -> None:
    settings.WORKFLOW_MAX_DEPTH = 1
    make_version(ECHO, name="leaf")
    make_version({"nodes": [{"id": "deeper", "type": "workflow", "workflow": "leaf"}]}, "mid")
    result = run({"nodes": [{"id": "sub", "type": "workflow", "workflow": "mid"}]})
    top = Execution.objects.get(pk=result.id)
    mid = Execution.objects.get(parent_execution=top)
    assert mid.depth == 1
    assert mid.status == "failed"
    cause = mid.error["cause"]
    assert cause["type"] == "MaxDepthExceeded"
    assert cause["retryable"] is False
    assert "WORKFLOW_MAX_DEPTH=1" in cause["message"]
    assert "'deeper'" in cause["message"]
    assert not Execution.objects.filter(parent_execution=mid).exists()
    assert Attempt.objects.filter(execution=mid).count() == 1
    assert result.status == "failed"
    assert result.error["cause"]["type"] == "ChildWorkflowFailed"
    assert result.error["cause"]["cause"]["cause"]["type"] == "MaxDepthExceeded"


def _workflow(client: APIClient, name: str, definition: dict) -> None:
    response = client.post("/workflows", {"name": name, "definition": definition}, format="json")
    assert response.status_code == 201, response.content


def _calls(name: str, node_id: str = "call", version: int | None = None) -> dict:
    node: dict[str, Any] = {"id": node_id, "type": "workflow", "workflow": name}
    if version is not None:
        node["version"] = version
    return {"nodes": [node]}


def test_a_version_that_closes_a_cycle_is_refused_with_400(admin) -> None:
    _workflow(admin, "a", ECHO)
    _workflow(admin, "b", _calls("a", "call_a"))
    response = admin.post(
        "/workflows/a/versions", {"definition": _calls("b", "call_b")}, format="json"
    )
    assert response.status_code == 400, response.content
    body = response.json()
    (problem,) = body["errors"]
    assert problem["node"] == "call_b"
    assert problem["field"] == "workflow"
    assert "a -> b -> a" in problem["message"]
    assert "a -> b -> a" in body["detail"]
    assert admin.get("/workflows/a").json()["latest_version"] == 1


def test_self_calls_and_cycles_through_map_bodies_are_refused(admin) -> None:
    _workflow(admin, "solo", ECHO)
    response = admin.post("/workflows/solo/versions", {"definition": _calls("solo")}, format="json")
    assert response.status_code == 400
    assert "solo -> solo" in response.json()["errors"][0]["message"]
    fan = {
        "nodes": [
            {
                "id": "fan",
                "type": "map",
                "items": "input.list",
                "node": {"type": "workflow", "workflow": "ring"},
            }
        ]
    }
    _workflow(admin, "ring", ECHO)
    _workflow(admin, "hop", _calls("ring"))
    response = admin.post(
        "/workflows/ring/versions",
        {
            "definition": {
                **fan,
                "nodes": [{**fan["nodes"][0], "node": {"type": "workflow", "workflow": "hop"}}],
            }
        },
        format="json",
    )
    assert response.status_code == 400, response.content
    (problem,) = response.json()["errors"]
    assert problem["node"] == "fan"
    assert problem["field"] == "node.workflow"
    assert "ring -> hop -> ring" in problem["message"]
    # A new workflow can close a cycle too: c calls d (not there yet), d calls c.
    _workflow(admin, "c", _calls("d"))
    response = admin.post("/workflows", {"name": "d", "definition": _calls("c")}, format="json")
    assert response.status_code == 400
    assert "d -> c -> d" in response.json()["errors"][0]["message"]


def test_calling_an_earlier_pinned_version_of_oneself_is_no_cycle(admin) -> None:
    _workflow(admin, "v", ECHO)
    response = admin.post(
        "/workflows/v/versions", {"definition": _calls("v", version=1)}, format="json"
    )
    assert response.status_code == 201, response.content
    # ... but pinning the version being created is.
    response = admin.post(
        "/workflows/v/versions", {"definition": _calls("v", version=3)}, format="json"
    )
    assert response.status_code == 400
    assert "v -> v@v3" in response.json()["errors"][0]["message"]


def test_the_database_keeps_one_child_per_parent_attempt() -> None:
    """The link (parent_execution, parent_node_id, parent_attempt) is unique by constraint,
    not only through the engine key the child is started under."""
    parent = start(ECHO)
    link = {
        "workflow_id": parent.workflow_id, "version_id": parent.version_id,
        "parent_execution": parent, "parent_node_id": "a", "depth": 1,
    }  # fmt: skip
    Execution.objects.create(**link, parent_attempt=1, engine_key="one")
    Execution.objects.create(**link, parent_attempt=2, engine_key="two")  # another attempt
    with pytest.raises(IntegrityError), transaction.atomic():
        Execution.objects.create(**link, parent_attempt=1, engine_key="three")
    # Top-level executions (no parent) are not links: any number of them.
    start(ECHO)
    start(ECHO)
