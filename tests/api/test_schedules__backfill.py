"""Schedules' fire time in their input, jitter and backfill, with an injected clock and
no workers: what each fire starts, and what a bad request is told."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from executions.models import Execution, Timer, TimerKind
from executions.schedules.models import Schedule, ScheduleFire
from executions.schedules.policy import fire_delay
from executions.schedules.services import schedule_create, schedule_run
from tests.factories import make_version

pytestmark = pytest.mark.django_db

ECHO = {"nodes": [{"id": "a", "type": "function", "function": "std.echo", "input": "{{ input }}"}]}
NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
STAMPED = {"fired": "{{ schedule.fire_time }}", "note": "run of {{ schedule.fire_time }}"}


@pytest.fixture(autouse=True)
def now(monkeypatch) -> datetime:
    monkeypatch.setattr("workflows.clock.now", lambda: NOW)
    return NOW


@pytest.fixture
def workflow():
    return make_version(ECHO, name="hourly").workflow


def hourly(workflow, **options) -> Schedule:
    return schedule_create(workflow=workflow, cron="0 * * * *", input=STAMPED, **options)


def backfill(api: APIClient, schedule_id: object, start: str, end: str):
    body = {"start": start, "end": end}
    return api.post(f"/schedules/{schedule_id}/backfill", body, format="json")


def started_inputs(schedule: Schedule) -> list[object]:
    fires = ScheduleFire.objects.filter(schedule=schedule, execution__isnull=False)
    return [fire.execution.input["fired"] for fire in fires.order_by("fire_time")]


def test_each_fire_renders_its_own_fire_time(workflow) -> None:
    schedule = hourly(workflow, catchup="all", catchup_window_seconds=4 * 3600, overlap="allow")
    Schedule.objects.filter(pk=schedule.pk).update(last_fire_at=NOW - timedelta(hours=3))
    schedule_run(schedule_id=str(schedule.pk), now=NOW)
    assert started_inputs(schedule) == [
        "2026-03-02T10:00:00Z",
        "2026-03-02T11:00:00Z",
        "2026-03-02T12:00:00Z",
    ]
    latest = Execution.objects.get(input__fired="2026-03-02T12:00:00Z")
    assert latest.input["note"] == "run of 2026-03-02T12:00:00Z"


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("{{ input.x }}", "read only schedule.fire_time and schedule.id"),
        ("{{ schedule.[ }}", "{{ schedule.[ }}"),
    ],
)
def test_input_templates_other_than_the_schedules_are_refused(
    api, workflow, template, problem
) -> None:
    body = {"workflow": "hourly", "cron": "0 * * * *", "input": {"x": template}}
    response = api.post("/schedules", body, format="json")
    assert response.status_code == 400
    assert problem in str(response.json()["input"])
    assert not Schedule.objects.exists()


def test_jitter_delays_each_fire_by_its_own_fixed_amount(api, workflow) -> None:
    created = api.post(
        "/schedules",
        {"workflow": "hourly", "cron": "0 * * * *", "jitter_seconds": 600, "input": STAMPED},
        format="json",
    )
    assert created.status_code == 201, created.content
    assert created.json()["jitter_seconds"] == 600
    schedule = Schedule.objects.get()
    execution = schedule_run(schedule_id=str(schedule.pk), now=NOW)
    assert execution is not None
    delay = fire_delay(str(schedule.pk), NOW, 600)
    assert timedelta(0) < delay < timedelta(seconds=600)
    # It has not begun: the start timer begins it at the fire time plus its delay.
    timer = Timer.objects.get(execution=execution, kind=TimerKind.START)
    assert timer.due_at == NOW + delay
    assert ScheduleFire.objects.get(schedule=schedule).start_at == NOW + delay
    assert execution.status == "pending"
    # A duplicate beat message for the same tick starts nothing and delays nothing anew.
    assert schedule_run(schedule_id=str(schedule.pk), now=NOW) == execution
    assert Timer.objects.filter(kind=TimerKind.START).count() == 1


def test_jitter_is_changed_by_patch(api, workflow) -> None:
    schedule = hourly(workflow)
    response = api.patch(f"/schedules/{schedule.pk}", {"jitter_seconds": 30}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["jitter_seconds"] == 30
    refused = api.patch(f"/schedules/{schedule.pk}", {"jitter_seconds": -1}, format="json")
    assert refused.status_code == 400
    assert "jitter_seconds" in refused.json()


def test_backfill_starts_one_execution_per_fire_time_and_a_repeat_none(api, workflow) -> None:
    schedule = hourly(workflow)
    first = backfill(api, schedule.pk, "2026-03-01T00:00:00Z", "2026-03-01T09:00:00Z")
    assert first.status_code == 202, first.content
    body = first.json()
    assert [fire["fire_time"] for fire in body["started"]] == [
        f"2026-03-01T{hour:02d}:00:00Z" for hour in range(10)
    ]
    assert body["already_ran"] == []
    assert started_inputs(schedule) == [f"2026-03-01T{hour:02d}:00:00Z" for hour in range(10)]
    assert all(fire.backfill for fire in ScheduleFire.objects.filter(schedule=schedule))

    again = backfill(api, schedule.pk, "2026-03-01T05:00:00Z", "2026-03-01T10:30:00Z")
    assert again.status_code == 202, again.content
    assert [fire["fire_time"] for fire in again.json()["started"]] == ["2026-03-01T10:00:00Z"]
    already = again.json()["already_ran"]
    assert [fire["fire_time"][11:13] for fire in already] == ["05", "06", "07", "08", "09"]
    assert all(fire["execution_id"] for fire in already)
    assert Execution.objects.count() == 11


def test_backfill_runs_a_fire_time_that_overlap_skipped(api, workflow) -> None:
    schedule = hourly(workflow)
    schedule_run(schedule_id=str(schedule.pk), now=NOW - timedelta(hours=1))
    # The 11:00 execution still runs (no workers): 12:00 is skipped.
    schedule_run(schedule_id=str(schedule.pk), now=NOW)
    assert ScheduleFire.objects.get(schedule=schedule, fire_time=NOW).outcome == "skipped"
    response = backfill(api, schedule.pk, "2026-03-02T11:00:00Z", "2026-03-02T12:00:00Z")
    assert response.status_code == 202, response.content
    assert [f["fire_time"] for f in response.json()["started"]] == ["2026-03-02T12:00:00Z"]
    assert [f["fire_time"] for f in response.json()["already_ran"]] == ["2026-03-02T11:00:00Z"]
    assert ScheduleFire.objects.get(schedule=schedule, fire_time=NOW).outcome == "started"


@pytest.mark.parametrize(
    ("start", "end", "status", "named", "words"),
    [
        ("2026-03-01T05:00:00Z", "2026-03-01T04:00:00Z", 400, "end", "before start"),
        ("2026-03-01T05:00:00Z", "2026-03-03T04:00:00Z", 400, "end", "in the future"),
        ("yesterday", "2026-03-01T04:00:00Z", 400, "start", "format"),
        ("2026-03-01T05:00:00Z", "2026-13-01T04:00:00Z", 400, "end", "format"),
        ("0001-01-01T00:00:00Z", "2026-03-01T04:00:00Z", 400, "end", "WORKFLOW_BACKFILL_MAX"),
    ],
)
def test_bad_backfills_are_refused_naming_the_problem(
    api, workflow, start, end, status, named, words
) -> None:
    schedule = hourly(workflow)
    response = backfill(api, schedule.pk, start, end)
    assert response.status_code == status, response.content
    assert words in str(response.json()[named])
    assert not Execution.objects.exists()


def test_a_backfill_past_the_bound_names_the_setting(api, workflow) -> None:
    schedule = hourly(workflow)
    with override_settings(WORKFLOW_BACKFILL_MAX=3):
        refused = backfill(api, schedule.pk, "2026-03-01T00:00:00Z", "2026-03-01T03:00:00Z")
        assert refused.status_code == 400
        assert "more than 3 fire times" in str(refused.json()["end"])
        assert "WORKFLOW_BACKFILL_MAX" in str(refused.json()["end"])
        fits = backfill(api, schedule.pk, "2026-03-01T00:00:00Z", "2026-03-01T02:00:00Z")
        assert fits.status_code == 202
    assert Execution.objects.count() == 3


def test_backfill_of_an_unknown_schedule_is_a_404(api, workflow) -> None:
    for key in ("7d1c7b1e-0000-4000-8000-000000000000", "not-a-uuid"):
        response = backfill(api, key, "2026-03-01T00:00:00Z", "2026-03-01T01:00:00Z")
        assert response.status_code == 404
        assert key in response.json()["detail"]


def test_backfill_needs_permission(client, django_user_model, workflow) -> None:
    schedule = hourly(workflow)
    viewer = django_user_model.objects.create_user("viewer")
    api = APIClient()
    api.force_authenticate(viewer)
    response = backfill(api, schedule.pk, "2026-03-01T00:00:00Z", "2026-03-01T01:00:00Z")
    assert response.status_code == 403
    assert "executions.change_schedule" in response.json()["detail"]
