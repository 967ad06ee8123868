"""Schedules in the admin: the overlap and catch-up policies shown and changed through
executions.schedules.services with PATCH's validation, and ScheduleFire as a read-only record (its
list, and the recent fires on the schedule's page). No workers."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django_celery_beat.models import PeriodicTask

from executions.schedules.models import Schedule, ScheduleFire
from executions.schedules.services import schedule_create, schedule_run
from tests.factories import make_version

pytestmark = pytest.mark.django_db

ECHO = {"nodes": [{"id": "a", "type": "function", "function": "std.echo"}]}
T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
SHOWN = {"enabled": "on", "overlap": "skip", "catchup": "last", "catchup_window_seconds": "3600"}


@pytest.fixture
def schedule() -> Schedule:
    workflow = make_version(ECHO, name="every-five").workflow
    return schedule_create(workflow=workflow, cron="*/5 * * * *", by="ada")


@pytest.fixture
def root() -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="pw"))
    return client


def page(schedule: Schedule) -> str:
    return f"/admin/executions/schedule/{schedule.pk}/change/"


def test_the_change_form_shows_and_saves_the_policies_through_the_service(root, schedule) -> None:
    html = root.get(page(schedule)).content.decode()
    for name in ("overlap", "catchup", "catchup_window_seconds"):
        assert f'name="{name}"' in html, name
    assert '<option value="buffer_one">' in html
    assert '<option value="all">' in html
    beat_changed = PeriodicTask.objects.get(pk=schedule.periodic_task_id).date_changed
    form = {**SHOWN, "overlap": "buffer_one", "catchup": "all", "catchup_window_seconds": "600"}
    assert root.post(page(schedule), form).status_code == 302
    saved = Schedule.objects.get(pk=schedule.pk)
    assert (saved.overlap, saved.catchup, saved.catchup_window_seconds) == (
        "buffer_one",
        "all",
        600,
    )
    assert (saved.enabled, saved.updated_by, saved.created_by) == (True, "root", "ada")
    # Policies are read at each fire: the beat entry is left alone.
    assert PeriodicTask.objects.get(pk=schedule.periodic_task_id).date_changed == beat_changed
    assert root.post(page(schedule), {**form, "enabled": ""}).status_code == 302
    assert PeriodicTask.objects.get(pk=schedule.periodic_task_id).enabled is False


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("overlap", "queue"),
        ("catchup", "some"),
        ("catchup_window_seconds", "-1"),
        ("catchup_window_seconds", str(2**31)),
        ("catchup_window_seconds", "1.5"),
    ],
)
def test_a_bad_value_is_refused_on_its_field_and_nothing_changes(
    root, schedule, field, value
) -> None:
    response = root.post(page(schedule), {**SHOWN, "overlap": "allow", field: value})
    assert response.status_code == 200  # the form again, with the error
    errors = response.context["adminform"].form.errors
    assert list(errors) == [field], errors
    saved = Schedule.objects.get(pk=schedule.pk)
    assert (saved.overlap, saved.catchup, saved.catchup_window_seconds) == ("skip", "last", 3600)
    assert saved.updated_by == "ada"


def fire_three(schedule: Schedule) -> None:
    """10:05 starts one; 10:10 finds it running (skip); an unrelated schedule fires too."""
    Schedule.objects.filter(pk=schedule.pk).update(last_fire_at=T0)
    schedule_run(schedule_id=str(schedule.pk), now=T0.replace(minute=5))
    schedule_run(schedule_id=str(schedule.pk), now=T0.replace(minute=10))
    other = schedule_create(workflow=schedule.workflow, cron="0 * * * *")
    Schedule.objects.filter(pk=other.pk).update(last_fire_at=T0)
    schedule_run(schedule_id=str(other.pk), now=T0.replace(hour=11))


def test_the_fires_list_links_executions_and_filters_by_schedule(root, schedule) -> None:
    fire_three(schedule)
    started = ScheduleFire.objects.get(schedule=schedule, outcome="started")
    html = root.get("/admin/executions/schedulefire/").content.decode()
    assert html.count('class="field-outcome"') == 3
    link = f'href="/admin/executions/execution/{started.execution_id}/change/"'
    assert link in html
    mine = root.get(f"/admin/executions/schedulefire/?schedule__id__exact={schedule.pk}")
    rows = mine.context["cl"].result_list
    assert [(f"{r.fire_time:%H:%M}", r.outcome) for r in rows] == [
        ("10:10", "skipped"),
        ("10:05", "started"),
    ]
    assert "By schedule" in mine.content.decode()


def test_the_fires_are_read_only(root, schedule) -> None:
    fire_three(schedule)
    fire = ScheduleFire.objects.get(schedule=schedule, outcome="skipped")
    assert root.get("/admin/executions/schedulefire/add/").status_code == 403
    url = f"/admin/executions/schedulefire/{fire.pk}/change/"
    assert root.get(url).status_code == 200  # the view page
    assert root.post(url, {"outcome": "started"}).status_code == 403
    assert (
        root.post(f"/admin/executions/schedulefire/{fire.pk}/delete/", {"post": "yes"}).status_code
        == 403
    )
    assert ScheduleFire.objects.get(pk=fire.pk).outcome == "skipped"
    viewer = User.objects.create_user("vic", password="pw", is_staff=True)
    viewer.groups.add(Group.objects.get(name="viewer"))
    client = Client()
    client.force_login(viewer)
    assert client.get("/admin/executions/schedulefire/").status_code == 200


def test_the_schedule_page_shows_its_recent_fires(root, schedule) -> None:
    html = root.get(page(schedule)).content.decode()
    assert "none yet" in html
    fire_three(schedule)
    started = ScheduleFire.objects.get(schedule=schedule, outcome="started")
    html = root.get(page(schedule)).content.decode()
    assert "2026-03-02 10:10:00 UTC</td><td>skipped" in html
    assert "2026-03-02 10:05:00 UTC</td><td>started" in html
    assert f"/admin/executions/execution/{started.execution_id}/change/" in html
    assert "11:00:00" not in html  # the other schedule's fire
    assert f"/admin/executions/schedulefire/?schedule__id__exact={schedule.pk}" in html
