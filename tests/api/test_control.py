"""Operator endpoints and replay_execution, without workers (approval and delay nodes run
in the orchestrator alone)."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from executions.models import Event, Execution, Task
from tests.factories import start, timeline
from tests.tampering import set_event_data

pytestmark = pytest.mark.django_db

APPROVAL = {
    "nodes": [
        {"id": "review", "type": "approval"},
        {
            "id": "hold",
            "type": "delay",
            "seconds": 3600,
            "depends_on": ["review"],
            "when": "nodes.review.output.data.hold",
        },
    ],
    "output": "{{ nodes.review.output }}",
}


def test_approve_completes_the_node_and_a_second_press_is_409(api) -> None:
    execution = start(APPROVAL)
    assert Task.objects.get(execution=execution, node_id="review").status == "waiting"
    url = f"/executions/{execution.pk}/tasks/review/approve"
    response = api.post(url, {"data": {"hold": False}, "comment": "ok"}, format="json")
    assert response.status_code == 202, response.content
    execution.refresh_from_db()
    assert execution.status == "succeeded"
    assert execution.output["approved"] is True
    assert execution.output["comment"] == "ok"
    assert execution.output["by"] == "operator"
    assert Task.objects.get(execution=execution, node_id="hold").status == "skipped"
    again = api.post(url, {}, format="json")
    assert again.status_code == 409
    assert "not waiting" in again.json()["detail"]


def test_reject_fails_the_execution(api) -> None:
    execution = start(APPROVAL)
    response = api.post(
        f"/executions/{execution.pk}/tasks/review/reject/", {"comment": "no"}, format="json"
    )
    assert response.status_code == 202
    execution.refresh_from_db()
    assert execution.status == "failed"
    assert execution.error["cause"]["type"] == "Rejected"


def test_signal_errors(api) -> None:
    execution = start(APPROVAL)
    assert (
        api.post(f"/executions/{execution.pk}/tasks/nope/approve", {}, format="json").status_code
        == 404
    )
    assert (
        api.post(f"/executions/{execution.pk}/tasks/hold/approve", {}, format="json").status_code
        == 409
    )
    assert (
        api.post(f"/executions/{execution.pk}/tasks/review/approve", [1], format="json").status_code
        == 400
    )


def test_cancel_then_409_and_retry_of_cancelled(api) -> None:
    execution = start(APPROVAL)
    assert api.post(f"/executions/{execution.pk}/retry", {}, format="json").status_code == 409
    response = api.post(f"/executions/{execution.pk}/cancel", {}, format="json")
    assert response.status_code == 202
    assert response.json()["status"] == "cancelled"
    assert api.post(f"/executions/{execution.pk}/cancel", {}, format="json").status_code == 409
    assert [(kind, node) for _, kind, node, _ in timeline(execution)][2:] == [
        ("workflow_cancel_requested", None),
        ("task_cancelled", "review"),
        ("task_cancelled", "hold"),
        ("workflow_cancelled", None),
    ]
    retried = api.post(f"/executions/{execution.pk}/retry", {}, format="json")
    assert retried.status_code == 202
    assert retried.json()["status"] == "running"
    review = Task.objects.get(execution=execution, node_id="review")
    assert review.status == "waiting"
    assert review.attempts == 2


def test_state_at_seq(api) -> None:
    execution = start(APPROVAL)
    api.post(
        f"/executions/{execution.pk}/tasks/review/approve", {"data": {"hold": True}}, format="json"
    )
    first = api.get(f"/executions/{execution.pk}/state?at_seq=1").json()
    assert first["status"] == "running"
    assert first["nodes"] == {}
    assert first["at_seq"] == 1
    second = api.get(f"/executions/{execution.pk}/state?at_seq=2").json()
    assert second["nodes"]["review"]["status"] == "waiting"
    now = api.get(f"/executions/{execution.pk}/state").json()
    assert now["nodes"]["review"]["status"] == "succeeded"
    assert now["nodes"]["hold"]["status"] == "waiting"
    assert api.get(f"/executions/{execution.pk}/state?at_seq=999").status_code == 400
    assert api.get(f"/executions/{execution.pk}/state?at_seq=-1").status_code == 400
    assert api.get(f"/executions/{execution.pk}/state?at_seq=x").status_code == 400


def test_replay_endpoint_pins_version_and_input(api) -> None:
    execution = start(APPROVAL, {"who": "ada"})
    response = api.post(f"/executions/{execution.pk}/replay", {}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["replay_of"] == str(execution.pk)
    assert body["input"] == {"who": "ada"}
    assert body["version"] == 1
    bad = api.post(f"/executions/{execution.pk}/replay", {"from_node": "ghost"}, format="json")
    assert bad.status_code == 404


@pytest.mark.tampered
def test_replay_execution_command_verifies_and_catches_an_altered_log(capsys) -> None:
    execution = start(APPROVAL)
    from executions.services.control import signal_send

    signal_send(
        execution_id=execution.pk, node_id="review", decision="approve", data={"hold": True}
    )
    call_command("replay_execution", str(execution.pk), "--verify")
    out = capsys.readouterr().out
    assert "verified" in out
    assert "review" in out
    assert "timer_started" in out
    call_command("replay_execution", str(execution.pk), "--at-seq", "2")
    assert "status running" in capsys.readouterr().out
    seq = Event.objects.get(execution=execution, type="timer_started").seq
    # Tamper as the database's owner could: behind the ORM, with PostgreSQL's append-only
    # trigger switched off for the moment (without that, the UPDATE is refused).
    set_event_data(
        execution.pk, seq, {"input": {"seconds": 1.0, "due_at": "2000-01-01T00:00:00+00:00"}}
    )
    with pytest.raises(CommandError, match=f"hash chain broken at seq {seq}"):
        call_command("replay_execution", str(execution.pk), "--verify")


def test_rebuild_rewrites_a_damaged_projection(capsys) -> None:
    execution = start(APPROVAL)
    Task.objects.filter(execution=execution).update(status="succeeded", attempts=9)
    Execution.objects.filter(pk=execution.pk).update(status="failed")
    call_command("replay_execution", str(execution.pk))
    assert "projection differs" in capsys.readouterr().out
    call_command("replay_execution", str(execution.pk), "--rebuild", "--quiet")
    execution.refresh_from_db()
    assert execution.status == "running"
    review = Task.objects.get(execution=execution, node_id="review")
    assert (review.status, review.attempts) == ("waiting", 1)


def test_command_rejects_bad_ids() -> None:
    with pytest.raises(CommandError, match="not an execution id"):
        call_command("replay_execution", "nope")
    with pytest.raises(CommandError, match="no execution"):
        call_command("replay_execution", "00000000-0000-0000-0000-000000000000")
