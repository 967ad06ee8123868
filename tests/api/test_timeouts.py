"""A definition's timeout_seconds through the API, without workers: validated where
definitions are, and the deadline it gives an execution shown on it."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from executions.models import Event, Execution, Timer
from executions.services.control import execution_cancel, execution_retry
from executions.services.start import execution_start
from executions.services.timers import timer_fire
from tests.factories import make_version
from tests.integration.engine import assert_replayable
from workflows import clock
from workflows.testing import run

pytestmark = pytest.mark.django_db

WAITS = {"nodes": [{"id": "gate", "type": "approval"}]}


def test_the_deadline_is_the_start_plus_timeout_seconds(api: APIClient) -> None:
    make_version({**WAITS, "timeout_seconds": 90}, name="bounded")
    response = api.post("/executions", {"workflow": "bounded"}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    started = Event.objects.get(execution_id=body["id"], type="workflow_started")
    deadline = datetime.fromisoformat(started.data["deadline_at"])
    assert datetime.fromisoformat(body["deadline_at"]) == deadline
    assert timedelta(0) <= deadline - started.timestamp <= timedelta(seconds=90)


def test_without_timeout_seconds_there_is_no_deadline(api: APIClient) -> None:
    make_version(WAITS, name="unbounded")
    body = api.post("/executions", {"workflow": "unbounded"}, format="json").json()
    assert body["deadline_at"] is None
    started = Event.objects.get(execution_id=body["id"], type="workflow_started")
    assert "deadline_at" not in started.data


@pytest.mark.parametrize("bad", [0, -5, "60", True, None, 1e12])
def test_a_bad_timeout_seconds_is_a_400_naming_it(api: APIClient, bad: object) -> None:
    definition = {**WAITS, "timeout_seconds": bad}
    response = api.post(
        "/workflows", {"name": "bad-timeout", "definition": definition}, format="json"
    )
    assert response.status_code == 400, response.content
    assert "timeout_seconds" in str(response.json())


def test_the_harness_passes_the_deadline_on_its_virtual_clock() -> None:
    """A deadline before a long delay ends the run failed, at the deadline's time."""
    undo = {"type": "function", "function": "std.echo"}
    result = run(
        {
            "timeout_seconds": 60,
            "nodes": [
                {"id": "book", "type": "function", "function": "std.echo", "compensation": undo},
                {"id": "nap", "type": "delay", "seconds": 3600, "depends_on": ["book"]},
            ],
        }
    )
    assert result.status == "failed"
    assert result.error["type"] == "WorkflowTimeout"
    assert result.node("nap").status == "cancelled"
    assert result.node("book.compensation").status == "succeeded"
    types = [event["type"] for event in result.events]
    assert "workflow_timed_out" in types
    (execution,) = Execution.objects.filter(status="failed")
    call_command("verify_logs", str(execution.pk))


def test_a_lost_deadline_timer_is_found_and_rebuilt_open(api: APIClient, capsys) -> None:
    make_version({**WAITS, "timeout_seconds": 90}, name="bounded")
    body = api.post("/executions", {"workflow": "bounded"}, format="json").json()
    timer = Timer.objects.get(execution_id=body["id"], kind="deadline")
    timer.delete()
    with pytest.raises(CommandError, match="1 problem"):
        call_command("verify_logs", body["id"])
    assert "[timers] deadline timer #0: no row" in capsys.readouterr().out
    call_command("verify_logs", body["id"], "--rebuild")
    rebuilt = Timer.objects.get(execution_id=body["id"], kind="deadline")
    # Still running: the deadline must still fire.
    assert (rebuilt.due_at, rebuilt.fired_at) == (timer.due_at, None)


def test_a_child_started_after_its_parents_deadline_passed_and_was_retried_has_none(
    api: APIClient,
) -> None:
    """A parent retried after it timed out runs with no deadline: a sub-workflow it starts
    then must not inherit the passed one (it would time out as soon as it started)."""
    make_version({**WAITS, "timeout_seconds": 90}, name="bounded-parent")
    kid_version = make_version(WAITS, name="unbounded-kid")
    body = api.post("/executions", {"workflow": "bounded-parent"}, format="json").json()
    deadline = Timer.objects.get(execution_id=body["id"], kind="deadline")
    Timer.objects.filter(pk=deadline.pk).update(due_at=clock.now() - timedelta(seconds=1))
    assert timer_fire(timer_id=deadline.pk)
    parent = Execution.objects.get(pk=body["id"])
    assert (parent.status, parent.error["type"]) == ("failed", "WorkflowTimeout")
    execution_retry(execution_id=parent.pk)
    parent.refresh_from_db()
    assert parent.status == "running"
    assert Timer.objects.get(pk=deadline.pk).fired_at is not None  # not set again

    kid, _ = execution_start(version=kid_version, input={}, parent=parent, parent_node_id="gate")
    kid.refresh_from_db()
    assert (kid.status, kid.deadline_at) == ("running", None)
    assert not Timer.objects.filter(execution=kid, kind="deadline").exists()


def test_a_timed_out_execution_retried_shows_no_deadline(api: APIClient, user) -> None:
    """The retry runs with no deadline (the first has passed and is not set again), so
    the execution shows none: in the API, in the console, and as its log folds."""
    make_version({**WAITS, "timeout_seconds": 90}, name="bounded-shown")
    body = api.post("/executions", {"workflow": "bounded-shown"}, format="json").json()
    deadline = Timer.objects.get(execution_id=body["id"], kind="deadline")
    Timer.objects.filter(pk=deadline.pk).update(due_at=clock.now() - timedelta(seconds=1))
    assert timer_fire(timer_id=deadline.pk)
    shown = api.get(f"/executions/{body['id']}").json()
    assert (shown["status"], shown["deadline_at"]) == ("failed", body["deadline_at"])
    execution_retry(execution_id=body["id"])
    shown = api.get(f"/executions/{body['id']}").json()
    assert (shown["status"], shown["deadline_at"]) == ("running", None)
    user.is_superuser = user.is_staff = True
    user.save()
    console = Client()
    console.force_login(user)
    page = console.get(f"/admin/executions/execution/{body['id']}/change/")
    assert page.status_code == 200
    assert 'id="wf-deadline"' not in page.content.decode()
    # The projection is the fold of the log, and replay re-derives every decision.
    assert_replayable(Execution.objects.get(pk=body["id"]))


def test_a_retry_before_the_deadline_runs_under_it_again(api: APIClient) -> None:
    """Its cancel closed the deadline timer; retried while the deadline is still ahead,
    the execution times out at it as it shows (deadline_at), not never."""
    make_version({**WAITS, "timeout_seconds": 90}, name="bounded-retried")
    body = api.post("/executions", {"workflow": "bounded-retried"}, format="json").json()
    execution_cancel(execution_id=body["id"])
    timer = Timer.objects.get(execution_id=body["id"], kind="deadline")
    assert timer.fired_at is not None  # closed by the ending
    execution_retry(execution_id=body["id"])
    timer.refresh_from_db()
    assert timer.fired_at is None
    shown = api.get(f"/executions/{body['id']}").json()
    assert shown["deadline_at"] == body["deadline_at"]
    Timer.objects.filter(pk=timer.pk).update(due_at=clock.now() - timedelta(seconds=1))
    assert timer_fire(timer_id=timer.pk)
    execution = Execution.objects.get(pk=body["id"])
    assert (execution.status, execution.error["type"]) == ("failed", "WorkflowTimeout")
    assert_replayable(execution)
