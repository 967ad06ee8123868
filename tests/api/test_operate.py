"""Pause/resume and why through the API, on the orchestrator alone (approval and delay
nodes need no worker; a function node stays queued). What needs a running worker is in
tests/integration/test_operate.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from executions.models import Event, Task
from executions.services import control
from tests.factories import start, timeline

pytestmark = pytest.mark.django_db

GATED = {
    "nodes": [
        {"id": "review", "type": "approval"},
        {"id": "nap", "type": "delay", "seconds": 3600},
        {"id": "after", "type": "function", "function": "std.noop", "depends_on": ["review"]},
        {
            "id": "maybe",
            "type": "function",
            "function": "std.noop",
            "depends_on": ["review"],
            "when": "nodes.review.output.data.go",
        },
        {"id": "last", "type": "function", "function": "std.noop", "depends_on": ["maybe"]},
    ]
}


def why(api, execution) -> dict[str, dict]:
    response = api.get(f"/executions/{execution.pk}/why")
    assert response.status_code == 200, response.content
    return {entry["node_id"]: entry for entry in response.json()}


def codes(entry: dict) -> list[str]:
    return [reason["code"] for reason in entry["reasons"]]


def test_pause_holds_an_approval_answer_until_resume(api) -> None:
    execution = start(GATED)
    base = f"/executions/{execution.pk}"
    paused = api.post(f"{base}/pause")
    assert paused.status_code == 202, paused.content
    assert paused.json()["status"] == "paused"
    assert api.post(f"{base}/pause").status_code == 409
    # The answer is a fact: it is recorded, but nothing follows from it while paused.
    approve = api.post(f"{base}/tasks/review/approve", {"data": {"go": False}}, format="json")
    assert approve.status_code == 202
    assert Task.objects.get(execution=execution, node_id="review").status == "waiting"
    assert Task.objects.get(execution=execution, node_id="after").status == "pending"
    entries = why(api, execution)
    assert set(entries) == {"review", "nap", "after", "maybe", "last"}
    assert all("execution_paused" in codes(e) for e in entries.values())
    before = timeline(execution)
    resumed = api.post(f"{base}/resume")
    assert resumed.status_code == 202, resumed.content
    assert resumed.json()["status"] == "running"
    assert api.post(f"{base}/resume").status_code == 409
    statuses = dict(Task.objects.filter(execution=execution).values_list("node_id", "status"))
    assert statuses["review"] == "succeeded"
    assert statuses["after"] == "scheduled"
    assert statuses["maybe"] == "skipped"
    assert timeline(execution)[: len(before)] == before
    by = dict(
        Event.objects.filter(
            execution=execution, type__in=["workflow_paused", "workflow_resumed"]
        ).values_list("type", "data__by")
    )
    assert by == {"workflow_paused": "operator", "workflow_resumed": "operator"}


def test_pause_and_resume_refuse_where_not_allowed(api) -> None:
    execution = start({"nodes": [{"id": "review", "type": "approval"}]})
    base = f"/executions/{execution.pk}"
    assert api.post(f"{base}/resume").status_code == 409
    api.post(f"{base}/tasks/review/approve", {}, format="json")
    refused = api.post(f"{base}/pause")
    assert refused.status_code == 409
    assert "only a running execution can be paused" in refused.json()["detail"]
    assert api.post("/executions/00000000-0000-0000-0000-000000000000/pause").status_code == 404


def test_cancel_of_a_paused_execution_cancels_it(api) -> None:
    execution = start(GATED)
    control.execution_pause(execution_id=execution.pk, by="ops")
    assert api.post(f"/executions/{execution.pk}/cancel").status_code == 202
    execution.refresh_from_db()
    assert execution.status == "cancelled"
    nap = api.get(f"/executions/{execution.pk}/tasks/nap/why").json()
    assert nap["status"] == "cancelled"
    assert codes(nap) == ["execution_ended"]


def test_why_names_parents_approval_timer_and_queue(api) -> None:
    execution = start(GATED)
    entries = why(api, execution)
    assert codes(entries["review"]) == ["waiting_for_approval"]
    assert codes(entries["nap"]) == ["timer"]
    assert entries["nap"]["reasons"][0]["due_at"] is not None
    parents = entries["after"]["reasons"][0]
    assert parents["code"] == "waiting_for_parents"
    assert parents["parents"] == [{"node_id": "review", "status": "waiting"}]
    assert codes(entries["last"]) == ["waiting_for_parents"]
    control.signal_send(
        execution_id=execution.pk, node_id="review", decision="approve", data={"go": True}
    )
    entries = why(api, execution)
    assert "review" not in entries
    queued = entries["after"]["reasons"][0]
    assert queued["code"] == "queued"
    assert queued["scheduled_at"] is not None


def test_why_a_skipped_node_was_skipped(api) -> None:
    execution = start(GATED)
    control.signal_send(
        execution_id=execution.pk, node_id="review", decision="approve", data={"go": False}
    )
    base = f"/executions/{execution.pk}/tasks"
    maybe = api.get(f"{base}/maybe/why").json()
    assert maybe["status"] == "skipped"
    assert codes(maybe) == ["condition_false"]
    last = api.get(f"{base}/last/why").json()
    assert codes(last) == ["trigger_rule"]
    assert "maybe is skipped" in last["reasons"][0]["message"]
    assert api.get(f"{base}/nope/why").status_code == 404


def test_why_upstream_failed_after_a_reject(api) -> None:
    execution = start(GATED)
    control.signal_send(execution_id=execution.pk, node_id="review", decision="reject")
    after = api.get(f"/executions/{execution.pk}/tasks/after/why").json()
    assert after["status"] == "skipped"
    assert codes(after) == ["upstream_failed"]
    assert after["reasons"][0]["nodes"] == ["review"]


def test_why_of_an_execution_that_starts_later(api) -> None:
    later = timezone.now() + timedelta(hours=1)
    execution = start({"nodes": [{"id": "a", "type": "approval"}]}, start_at=later)
    (entry,) = why(api, execution).values()
    assert codes(entry) == ["timer"]
    assert entry["reasons"][0]["due_at"] == later.isoformat()
