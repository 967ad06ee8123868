"""POST /executions/bulk/cancel|retry and the executions list's filters (django-filter),
which a bulk `filter` shares."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from executions.models import Event, Execution
from executions.services import bulk, control
from executions.services.start import execution_start
from tests.factories import make_version

pytestmark = pytest.mark.django_db

APPROVAL = {"nodes": [{"id": "review", "type": "approval"}]}
MISSING = "00000000-0000-0000-0000-000000000000"


def waiting(count: int, version=None) -> list[Execution]:
    version = version or make_version(APPROVAL)
    return [execution_start(version=version, input={})[0] for _ in range(count)]


def test_bulk_cancel_by_ids_reports_what_it_skipped(api) -> None:
    first, second, done = waiting(3)
    control.execution_cancel(execution_id=done.pk)
    ids = [str(first.pk), str(second.pk), str(done.pk), MISSING, str(first.pk)]
    response = api.post("/executions/bulk/cancel", {"ids": ids}, format="json")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["matched"] == 3
    assert body["accepted"] == 2
    assert body["skipped"] == [
        {"id": MISSING, "reason": "no such execution"},
        {"id": str(done.pk), "reason": "execution is already cancelled; nothing to cancel"},
    ]
    for execution in (first, second):
        execution.refresh_from_db()
        assert execution.status == "cancelled"
        requested = Event.objects.get(execution=execution, type="workflow_cancel_requested")
        assert requested.data["by"] == "operator"


def test_bulk_retry_by_filter(api) -> None:
    version = make_version(APPROVAL)
    cancelled = waiting(2, version)
    untouched = waiting(1, version)[0]
    other = waiting(1)[0]
    for execution in [*cancelled, other]:
        control.execution_cancel(execution_id=execution.pk)
    name = version.workflow.name
    body = {"filter": {"status": "cancelled", "workflow": name}}
    response = api.post("/executions/bulk/retry", body, format="json")
    assert response.status_code == 202, response.content
    assert response.json() == {"matched": 2, "accepted": 2, "skipped": []}
    statuses = set(
        Execution.objects.filter(pk__in=[e.pk for e in cancelled]).values_list("status", flat=True)
    )
    assert statuses == {"running"}
    assert Execution.objects.get(pk=other.pk).status == "cancelled"
    assert Execution.objects.get(pk=untouched.pk).status == "running"
    # Not failed or cancelled: retry refuses each, and says why.
    response = api.post("/executions/bulk/retry", {"filter": {"workflow": name}}, format="json")
    assert response.json()["accepted"] == 0
    assert {s["reason"] for s in response.json()["skipped"]} == {
        "only a failed or cancelled execution can be retried; this one is running"
    }


def test_bulk_filter_by_created_range(api) -> None:
    version = make_version(APPROVAL)
    early, late = waiting(2, version)
    middle = early.created_at + (late.created_at - early.created_at) / 2
    body = {"filter": {"workflow": version.workflow.name, "created_after": middle.isoformat()}}
    response = api.post("/executions/bulk/cancel", body, format="json")
    assert response.json()["matched"] == 1
    assert Execution.objects.get(pk=late.pk).status == "cancelled"
    assert Execution.objects.get(pk=early.pk).status == "running"


@override_settings(WORKFLOW_BULK_MAX_EXECUTIONS=2)
def test_bulk_is_bounded(api) -> None:
    version = make_version(APPROVAL)
    executions = waiting(3, version)
    too_many = api.post(
        "/executions/bulk/cancel", {"filter": {"workflow": version.workflow.name}}, format="json"
    )
    assert too_many.status_code == 400
    assert "WORKFLOW_BULK_MAX_EXECUTIONS" in too_many.json()["detail"]
    ids = [str(e.pk) for e in executions]
    assert api.post("/executions/bulk/cancel", {"ids": ids}, format="json").status_code == 400
    assert set(Execution.objects.filter(pk__in=ids).values_list("status", flat=True)) == {"running"}


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"ids": [MISSING], "filter": {}},
        {"ids": ["not-a-uuid"]},
        {"ids": "x"},
        {"filter": {"status": "RUNNING"}},
        {"filter": {"colour": "red"}},
        {"filter": {"created_after": "yesterday"}},
        {"filter": {"has_failed_nodes": "yes"}},
        [],
    ],
)
def test_bulk_bad_bodies_are_400(api, body) -> None:
    response = api.post("/executions/bulk/cancel", body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["detail"]


def test_one_broken_execution_fails_alone(api, monkeypatch) -> None:
    broken, fine = waiting(2)

    def cancel(*, execution_id, by=""):
        if str(execution_id) == str(broken.pk):
            raise RuntimeError("a bug in one execution")
        return control.execution_cancel(execution_id=execution_id, by=by)

    monkeypatch.setitem(bulk.ACTIONS, "cancel", cancel)
    body = {"ids": [str(broken.pk), str(fine.pk)]}
    response = api.post("/executions/bulk/cancel", body, format="json")
    assert response.status_code == 202
    assert response.json()["accepted"] == 1
    (skipped,) = response.json()["skipped"]
    assert skipped["reason"] == "engine error: RuntimeError: a bug in one execution"
    assert Execution.objects.get(pk=broken.pk).status == "failed"
    assert Execution.objects.get(pk=fine.pk).status == "cancelled"


def test_the_list_filters(api) -> None:
    version = make_version(APPROVAL)
    early, late = waiting(2, version)
    control.signal_send(execution_id=early.pk, node_id="review", decision="reject")
    name = version.workflow.name

    def listed(**query) -> set[str]:
        response = api.get("/executions", {"workflow": name, **query})
        assert response.status_code == 200, response.content
        return {row["id"] for row in response.json()["results"]}

    assert listed() == {str(early.pk), str(late.pk)}
    assert listed(status="failed") == {str(early.pk)}
    assert listed(has_failed_nodes="true") == {str(early.pk)}
    assert listed(has_failed_nodes="false") == {str(late.pk)}
    after = (late.created_at - timedelta(microseconds=1)).isoformat()
    assert listed(created_after=after) == {str(late.pk)}
    assert listed(created_before=after) == {str(early.pk)}
    assert listed(created_after=(timezone.now() + timedelta(days=1)).isoformat()) == set()
    assert api.get("/executions", {"created_after": "soon"}).status_code == 400
    assert api.get("/executions", {"has_failed_nodes": "maybe"}).status_code == 400


def test_the_schema_documents_the_list_filters(api) -> None:
    schema = api.get("/schema", HTTP_ACCEPT="application/json").json()
    names = {p["name"] for p in schema["paths"]["/executions"]["get"]["parameters"]}
    assert {"status", "workflow", "created_after", "created_before", "has_failed_nodes"} <= names


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ({"created_before": "1655-08-15T08:27:13-18:08"}, False),
        ({"created_after": "0001-01-01T00:00:00+10:00"}, True),
        ({"created_before": "9999-12-31T23:59:59-10:00"}, True),
    ],
)
def test_dates_any_iso_offset_and_the_ends_of_time(api, query, found) -> None:
    """PostgreSQL takes offsets up to 15:59 only; some moments have no UTC form in Python."""
    version = make_version(APPROVAL)
    waiting(1, version)
    response = api.get("/executions", {"workflow": version.workflow.name, **query})
    assert response.status_code == 200, response.content
    assert bool(response.json()["results"]) is found


def test_the_list_pages_without_counting(api) -> None:
    version = make_version(APPROVAL)
    made = {str(e.pk) for e in waiting(3, version)}
    url = f"http://testserver/executions?workflow={version.workflow.name}&limit=2"
    first = api.get(url).json()
    assert set(first) == {"next", "previous", "results"}
    assert first["previous"] is None
    assert "offset=2" in first["next"]
    second = api.get(first["next"]).json()
    assert second["next"] is None
    assert second["previous"] is not None
    assert {row["id"] for row in first["results"] + second["results"]} == made
