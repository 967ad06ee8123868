"""The schedules REST API and the beat entry each schedule owns; no workers."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django_celery_beat.models import CrontabSchedule, PeriodicTask
from rest_framework.test import APIClient

from executions.models import Execution
from executions.schedules.models import Schedule
from executions.schedules.services import RUN_TASK
from executions.schedules.tasks import run_schedule
from tests.factories import make_version
from workflows.services import workflow_version_create

pytestmark = pytest.mark.django_db

ECHO = {"nodes": [{"id": "a", "type": "function", "function": "std.echo", "input": "{{ input }}"}]}


@pytest.fixture
def version():
    return make_version(ECHO, name="nightly")


def _at(monkeypatch, when: datetime) -> None:
    monkeypatch.setattr("workflows.clock.now", lambda: when)


def _create(api: APIClient, **body) -> dict:
    response = api.post("/schedules", {"workflow": "nightly", **body}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_create_returns_the_schedule_and_its_next_run(api, version, monkeypatch) -> None:
    # Friday 10:00 in Paris (09:00 UTC); the next weekday 09:30 is Monday, after the
    # switch to summer time, so 07:30 UTC.
    _at(monkeypatch, datetime(2025, 3, 28, 9, 0, tzinfo=UTC))
    body = _create(api, cron="30 9 * * 1-5", timezone="Europe/Paris", input={"n": 1})
    assert body["next_run_at"] == "2025-03-31T07:30:00Z"
    assert body["workflow_id"] == version.workflow_id
    assert body["version"] is None
    assert (body["cron"], body["timezone"], body["input"], body["enabled"]) == (
        "30 9 * * 1-5",
        "Europe/Paris",
        {"n": 1},
        True,
    )
    assert {"id", "created_at"} <= set(body)


def test_defaults_and_pinned_version(api, version, monkeypatch) -> None:
    _at(monkeypatch, datetime(2025, 1, 1, 12, 2, 30, tzinfo=UTC))
    body = _create(api, workflow=version.workflow_id, version=1, cron="*/5 * * * *")
    assert body["timezone"] == "UTC"
    assert body["input"] == {}
    assert body["version"] == 1
    assert body["next_run_at"] == "2025-01-01T12:05:00Z"


def test_the_beat_entry_mirrors_the_schedule_and_goes_with_it(api, version) -> None:
    body = _create(api, cron="0 3 * * *", timezone="Asia/Tokyo", enabled=False)
    assert body["next_run_at"] is None  # disabled: the beat will not fire it
    task = PeriodicTask.objects.get(workflow_schedule__id=body["id"])
    assert (task.task, task.args, task.enabled) == (RUN_TASK, f'["{body["id"]}"]', False)
    crontab = task.crontab
    assert (crontab.minute, crontab.hour, crontab.day_of_month) == ("0", "3", "*")
    assert str(crontab.timezone) == "Asia/Tokyo"

    resumed = api.patch(f"/schedules/{body['id']}", {"enabled": True}, format="json")
    assert resumed.status_code == 200
    assert resumed.json()["enabled"] is True
    task.refresh_from_db()
    assert task.enabled is True
    assert resumed.json()["next_run_at"] is not None

    assert api.delete(f"/schedules/{body['id']}/").status_code == 204
    assert not Schedule.objects.exists()
    assert not PeriodicTask.objects.filter(pk=task.pk).exists()
    assert not CrontabSchedule.objects.filter(pk=crontab.pk).exists()
    assert api.get(f"/schedules/{body['id']}").status_code == 404
    assert api.delete(f"/schedules/{body['id']}").status_code == 404


def test_resuming_does_not_catch_up_the_paused_ticks(api, version) -> None:
    schedule_id = _create(api, cron="* * * * *")["id"]
    tasks = PeriodicTask.objects.filter(workflow_schedule__id=schedule_id)
    tasks.update(last_run_at=datetime(2025, 1, 1, tzinfo=UTC))
    for enabled in (False, True):
        response = api.patch(f"/schedules/{schedule_id}/", {"enabled": enabled}, format="json")
        assert response.status_code == 200
    # None: the beat counts from the moment it was resumed (date_changed).
    assert tasks.get().last_run_at is None
    # An empty PATCH changes nothing (every PATCH field is optional, as the schema says).
    unchanged = api.patch(f"/schedules/{schedule_id}", {}, format="json")
    assert unchanged.status_code == 200
    assert unchanged.json()["enabled"] is True
    assert tasks.get().last_run_at is None
    bad = api.patch(f"/schedules/{schedule_id}", {"enabled": "yes"}, format="json")
    assert bad.status_code == 400
    assert "enabled" in bad.json()


def test_list_and_get(api, version) -> None:
    ids = [_create(api, cron=f"{minute} * * * *")["id"] for minute in (1, 2)]
    listed = api.get("/schedules").json()
    assert {"next", "previous", "results"} <= set(listed)
    assert [s["id"] for s in listed["results"]] == ids
    assert api.get("/schedules/?limit=1").json()["results"][0]["id"] == ids[0]
    one = api.get(f"/schedules/{ids[1]}").json()
    assert one["id"] == ids[1]
    assert one["cron"] == "2 * * * *"
    assert api.get(f"/schedules/{uuid.uuid4()}").status_code == 404
    assert api.get("/schedules/not-a-uuid").json()["detail"].startswith("No schedule")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"cron": "* * * * *"}, "workflow"),
        ({"workflow": "no-such-workflow", "cron": "* * * * *"}, "workflow"),
        ({"workflow": True, "cron": "* * * * *"}, "workflow"),
        ({"workflow": "night\x00ly", "cron": "* * * * *"}, "workflow"),
        ({"workflow": "nightly", "cron": "* * * * *", "input": {"a": ["\x00"]}}, "input"),
        ({"workflow": "nightly", "cron": "* * * * *", "input": {"\x00": 1}}, "input"),
        ({"workflow": "nightly", "cron": "*\x00 * * * *"}, "cron"),
        ({"workflow": "nightly"}, "cron"),
        ({"workflow": "nightly", "cron": ""}, "cron"),
        ({"workflow": "nightly", "cron": "* * * *"}, "cron"),
        ({"workflow": "nightly", "cron": "0 * * * * *"}, "cron"),
        ({"workflow": "nightly", "cron": "61 * * * *"}, "cron"),
        ({"workflow": "nightly", "cron": "0 0 L * *"}, "cron"),  # croniter only
        ({"workflow": "nightly", "cron": "0 0 * * 7"}, "cron"),  # croniter only
        ({"workflow": "nightly", "cron": "0 0 31 2 *"}, "cron"),  # never fires
        ({"workflow": "nightly", "cron": "@daily"}, "cron"),
        ({"workflow": "nightly", "cron": "* * * * " + ",".join(["1"] * 40)}, "cron"),
        ({"workflow": "nightly", "cron": "* * * * *", "timezone": "Mars/Olympus"}, "timezone"),
        ({"workflow": "nightly", "cron": "* * * * *", "timezone": "../etc/passwd"}, "timezone"),
        ({"workflow": "nightly", "cron": "* * * * *", "timezone": ""}, "timezone"),
        ({"workflow": "nightly", "cron": "* * * * *", "version": 2}, "version"),
        ({"workflow": "nightly", "cron": "* * * * *", "version": 0}, "version"),
        ({"workflow": "nightly", "cron": "* * * * *", "enabled": "maybe"}, "enabled"),
    ],
)
def test_bad_requests_are_400_naming_the_field(api, version, body, field) -> None:
    response = api.post("/schedules", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert response.json()["detail"]
    assert not Schedule.objects.exists()
    assert not PeriodicTask.objects.filter(task=RUN_TASK).exists()


def test_anonymous_requests_get_401(version) -> None:
    client = APIClient()
    assert client.get("/schedules").status_code == 401
    assert client.post("/schedules", {}, format="json").status_code == 401
    assert client.delete(f"/schedules/{uuid.uuid4()}").status_code == 401


TICK = datetime(2025, 6, 1, 8, 5, tzinfo=UTC)


def test_one_execution_per_tick_however_often_the_task_runs(api, version, monkeypatch) -> None:
    schedule_id = _create(api, cron="*/5 * * * *", input={"n": 7}, overlap="allow")["id"]
    # A redelivered message, a slow worker, a worker whose clock is a little behind.
    for delay in (timedelta(seconds=1), timedelta(seconds=40), timedelta(seconds=-2)):
        _at(monkeypatch, TICK + delay)
        run_schedule(schedule_id)
    execution = Execution.objects.get()
    # The engine's own key: the client's idempotency_key column is never used for it.
    assert execution.engine_key == f"schedule:{schedule_id}:2025-06-01T08:05:00+00:00"
    assert execution.idempotency_key is None
    assert execution.created_by == f"schedule:{schedule_id}"
    assert execution.input == {"n": 7}
    assert execution.version == version

    _at(monkeypatch, TICK + timedelta(minutes=5, seconds=1))
    run_schedule(schedule_id)
    assert Execution.objects.count() == 2


def test_runs_the_latest_version_unless_pinned(api, version, monkeypatch) -> None:
    latest = _create(api, cron="*/5 * * * *")["id"]
    pinned = _create(api, cron="*/5 * * * *", version=1)["id"]
    workflow_version_create(workflow=version.workflow, definition=ECHO)
    _at(monkeypatch, TICK)
    run_schedule(latest)
    run_schedule(pinned)
    versions = dict(Execution.objects.values_list("engine_key", "version__version"))
    assert versions == {
        f"schedule:{latest}:2025-06-01T08:05:00+00:00": 2,
        f"schedule:{pinned}:2025-06-01T08:05:00+00:00": 1,
    }


def test_a_new_version_does_not_restart_a_tick_already_run(api, version, monkeypatch) -> None:
    schedule_id = _create(api, cron="*/5 * * * *")["id"]
    _at(monkeypatch, TICK)
    run_schedule(schedule_id)
    workflow_version_create(workflow=version.workflow, definition=ECHO)
    run_schedule(schedule_id)  # the same tick, redelivered: its key is taken
    assert Execution.objects.get().version == version


def test_disabled_or_deleted_schedules_start_nothing(api, version, monkeypatch) -> None:
    paused = _create(api, cron="*/5 * * * *", enabled=False)["id"]
    deleted = _create(api, cron="*/5 * * * *")["id"]
    api.delete(f"/schedules/{deleted}")
    _at(monkeypatch, TICK)
    assert run_schedule(paused) is None
    assert run_schedule(deleted) is None
    assert not Execution.objects.exists()


def test_admin_pauses_and_deletes_through_the_services(api, version, admin_client) -> None:
    schedule_id = _create(api, cron="*/5 * * * *")["id"]
    assert admin_client.get("/admin/executions/schedule/").status_code == 200
    page = f"/admin/executions/schedule/{schedule_id}/change/"
    assert admin_client.get(page).status_code == 200
    # The form as shown, with the checkbox left unticked.
    shown = {"overlap": "skip", "catchup": "last", "catchup_window_seconds": 3600}
    assert admin_client.post(page, shown).status_code == 302
    assert PeriodicTask.objects.get(workflow_schedule__id=schedule_id).enabled is False
    delete = f"/admin/executions/schedule/{schedule_id}/delete/"
    assert admin_client.post(delete, {"post": "yes"}).status_code == 302
    assert not PeriodicTask.objects.filter(task=RUN_TASK).exists()
