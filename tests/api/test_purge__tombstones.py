"""A purged execution's id answers with its tombstone: 410 on the API (the execution and
every route under it), ExecutionPurged from workflows.api, a read-only admin page, and
verify_logs --all counts it apart."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from executions.models import Execution, Tombstone
from tests.api.test_purge import ECHO, purge, run_all
from tests.factories import start
from workflows import api as engine

pytestmark = pytest.mark.django_db(transaction=True)

FIELDS = {"id", "workflow", "version", "status", "ended_at", "purged_at", "events", "last_hash"}
ROUTES = [
    ("get", ""),
    ("get", "/tasks"),
    ("get", "/tasks/a"),
    ("get", "/events"),
    ("get", "/state"),
    ("get", "/why"),
    ("get", "/tasks/a/why"),
    ("post", "/cancel"),
    ("post", "/pause"),
    ("post", "/resume"),
    ("post", "/retry"),
    ("post", "/replay"),
    ("post", "/tasks/a/approve"),
    ("post", "/tasks/a/reject"),
    ("post", "/tasks/a/retry"),
    ("post", "/tasks/a/fail"),
    ("post", "/signals/go"),
]


@pytest.fixture
def purged() -> Execution:
    execution = run_all(start(ECHO, {"x": 1}))
    purge()
    assert not Execution.objects.filter(pk=execution.pk).exists()
    return execution


@pytest.mark.parametrize(("method", "suffix"), ROUTES)
def test_every_route_of_a_purged_execution_answers_410_with_its_tombstone(
    api, purged: Execution, method: str, suffix: str
) -> None:
    response = getattr(api, method)(f"/executions/{purged.pk}{suffix}", {}, format="json")
    assert response.status_code == 410, response.content
    body = response.json()
    assert set(body) == FIELDS
    assert body["id"] == str(purged.pk)
    assert (body["workflow"], body["version"]) == (purged.workflow.name, 1)
    assert (body["status"], body["events"]) == ("succeeded", purged.last_seq)
    assert body["last_hash"] == purged.last_hash
    assert body["ended_at"] == purged.ended_at.isoformat().replace("+00:00", "Z")
    assert body["purged_at"].endswith("Z")


def test_the_schema_declares_the_410_and_its_body_where_it_is_answered(
    api, purged: Execution
) -> None:
    """Every operation under /executions/{execution_id} declares the 410 with the
    tombstone's fields, and answers it with them; no other operation declares it."""
    schema = APIClient().get("/schema", {"format": "json"}).json()
    tombstone = schema["components"]["schemas"]["Tombstone"]
    assert set(tombstone["properties"]) == set(tombstone["required"]) == FIELDS
    under = 0
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            declared = operation["responses"].get("410")
            if "{execution_id}" not in path:
                assert declared is None, (method, path)
                continue
            under += 1
            body = declared["content"]["application/json"]["schema"]
            assert body == {"$ref": "#/components/schemas/Tombstone"}, (method, path)
            url = path.format(execution_id=purged.pk, node_id="a", name="go")
            response = getattr(api, method)(url, {}, format="json")
            assert response.status_code == 410, (method, path, response.content)
            assert set(response.json()) == FIELDS
    assert under == len(ROUTES)


def test_an_id_never_seen_is_still_404(api) -> None:
    response = api.get("/executions/00000000-0000-4000-8000-000000000000")
    assert response.status_code == 404


def test_workflows_api_get_raises_execution_purged(purged: Execution) -> None:
    with pytest.raises(engine.ExecutionPurged) as caught:
        engine.get(purged.pk)
    assert isinstance(caught.value, engine.UnknownExecution)
    assert isinstance(caught.value, engine.WorkflowError)
    assert caught.value.tombstone["last_hash"] == purged.last_hash
    assert "was purged" in str(caught.value)


def test_a_handle_taken_before_the_purge_raises_it_on_refresh() -> None:
    handle = engine.get(run_all(start(ECHO, {"x": 1})).pk)
    purge()
    with pytest.raises(engine.ExecutionPurged):
        handle.refresh()
    with pytest.raises(engine.ExecutionPurged):
        handle.cancel()


def test_verify_logs_all_counts_purged_executions_apart_and_passes(purged: Execution) -> None:
    kept = run_all(start(ECHO, {"x": 2}))
    out = StringIO()
    call_command("verify_logs", "--all", stdout=out)
    said = out.getvalue()
    assert "checked 1 executions" in said
    assert "purged 1 executions (tombstones, not checked)" in said
    assert "ok: every checked log verifies" in said
    out = StringIO()
    call_command("verify_logs", str(purged.pk), str(kept.pk), stdout=out)
    assert "purged 1 executions" in out.getvalue()


def test_the_admin_shows_tombstones_read_only(admin_client, purged: Execution) -> None:
    listing = admin_client.get("/admin/executions/tombstone/")
    assert listing.status_code == 200
    assert str(purged.pk) in listing.content.decode()
    page = admin_client.get(f"/admin/executions/tombstone/{purged.pk}/change/")
    assert page.status_code == 200
    assert Tombstone.objects.get(pk=purged.pk).last_hash in page.content.decode()
    assert admin_client.get("/admin/executions/tombstone/add/").status_code == 403
    deleted = admin_client.post(f"/admin/executions/tombstone/{purged.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 403
    assert Tombstone.objects.filter(pk=purged.pk).exists()


def test_the_console_page_of_a_purged_execution_answers_410_with_its_tombstone(
    admin_client, purged: Execution
) -> None:
    page = admin_client.get(f"/admin/executions/execution/{purged.pk}/change/")
    assert page.status_code == 410
    text = page.content.decode()
    assert purged.last_hash in text
    assert f"/admin/executions/tombstone/{purged.pk}/change/" in text
    # An id that never existed is still "not found".
    unknown = "00000000-0000-0000-0000-000000000000"
    assert admin_client.get(f"/admin/executions/execution/{unknown}/change/").status_code == 404
    assert admin_client.get("/admin/executions/execution/not-a-uuid/change/").status_code == 404
