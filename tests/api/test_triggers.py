"""Event triggers: /triggers and POST /events, no workers."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from executions.models import Execution
from executions.triggers.models import PublishedEvent, Trigger, TriggerRun
from tests.factories import make_version
from workflows.services import workflow_version_create

pytestmark = pytest.mark.django_db

ECHO = {"nodes": [{"id": "a", "type": "function", "function": "std.echo", "input": "{{ input }}"}]}


@pytest.fixture
def workflow():
    return make_version(ECHO, name="on-signup").workflow


def trigger(api: APIClient, **body) -> dict:
    body = {"name": "welcome", "event": "user.signed_up", "workflow": "on-signup", **body}
    response = api.post("/triggers", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def publish(api: APIClient, key: str, data, **headers) -> dict:
    response = api.post("/events", {"key": key, "data": data}, format="json", headers=headers)
    assert response.status_code == 202, response.content
    return response.json()


def test_an_event_starts_every_matching_trigger_with_its_templated_input(api, workflow) -> None:
    trigger(api, input={"user": "{{ event.data.id }}", "said": "hi {{ event.data.name }}"})
    trigger(api, name="vip", filter="event.data.plan == 'pro'", input=None)
    trigger(api, name="other", event="user.left")
    trigger(api, name="off", enabled=False)
    plain = publish(api, "user.signed_up", {"id": 7, "name": "Ada", "plan": "free"})
    (started,) = plain["executions"]
    execution = Execution.objects.get(pk=started)
    assert execution.input == {"user": 7, "said": "hi Ada"}
    assert execution.created_by == f"event:{plain['id']}"
    pro = publish(api, "user.signed_up", {"id": 8, "name": "Bo", "plan": "pro"})
    assert len(pro["executions"]) == 2
    runs = TriggerRun.objects.filter(event_id=pro["id"]).order_by("trigger_name")
    assert [r.trigger_name for r in runs] == ["vip", "welcome"]
    assert runs[0].execution.input == {"id": 8, "name": "Bo", "plan": "pro"}  # the data
    assert publish(api, "nobody.listens", 1)["executions"] == []


def test_an_idempotency_key_makes_a_repeat_start_nothing_new(api, workflow) -> None:
    trigger(api)
    first = publish(api, "user.signed_up", {"id": 1}, **{"Idempotency-Key": "evt-1"})
    again = publish(api, "user.signed_up", {"id": 1}, **{"Idempotency-Key": "evt-1"})
    assert again == first
    assert Execution.objects.count() == 1
    assert PublishedEvent.objects.count() == 1


def test_a_template_that_fails_on_an_event_starts_nothing_and_says_why(api, workflow) -> None:
    trigger(api, input={"n": "{{ event.data.n | length(@) }}"})
    accepted = publish(api, "user.signed_up", {"n": 5})
    assert accepted["executions"] == []
    (run,) = TriggerRun.objects.filter(event_id=accepted["id"])
    assert run.execution is None
    assert "length" in run.error


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"filter": "input.x == `1`"}, "filter"),
        ({"filter": "event.data.["}, "filter"),
        ({"input": {"x": "{{ secrets.TOKEN }}"}}, "input"),
        ({"workflow": "nope"}, "workflow"),
        ({"version": 9}, "version"),
        ({"name": "not a slug"}, "name"),
    ],
)
def test_a_bad_trigger_is_a_400_naming_the_field(api, workflow, body, field) -> None:
    body = {"name": "t", "event": "e", "workflow": "on-signup", **body}
    response = api.post("/triggers", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()


def test_list_get_delete_and_a_taken_name(api, workflow) -> None:
    trigger(api)
    assert (
        api.post(
            "/triggers", {"name": "welcome", "event": "x", "workflow": "on-signup"}, format="json"
        ).status_code
        == 400
    )
    listed = api.get("/triggers").json()["results"]
    assert [t["name"] for t in listed] == ["welcome"]
    assert api.get("/triggers/welcome").json()["event"] == "user.signed_up"
    assert api.delete("/triggers/welcome").status_code == 204
    assert api.get("/triggers/welcome").status_code == 404
    assert api.delete("/triggers/welcome").status_code == 404


def test_permissions(workflow) -> None:
    nobody = get_user_model().objects.create_user("nobody")
    client = APIClient()
    client.force_authenticate(nobody)
    assert client.get("/triggers").status_code == 403
    assert client.post("/events", {"key": "k"}, format="json").status_code == 403
    assert APIClient().post("/events", {"key": "k"}, format="json").status_code == 401


def test_the_admin_lists_triggers_and_recent_events(api, workflow, admin_client) -> None:
    trigger(api)
    accepted = publish(api, "user.signed_up", {"id": 3})
    triggers_page = admin_client.get("/admin/executions/trigger/")
    assert triggers_page.status_code == 200
    assert "welcome" in triggers_page.content.decode()
    events_page = admin_client.get("/admin/executions/publishedevent/")
    assert events_page.status_code == 200
    assert "user.signed_up" in events_page.content.decode()
    detail = admin_client.get(f"/admin/executions/publishedevent/{accepted['id']}/change/")
    assert detail.status_code == 200
    assert accepted["executions"][0] in detail.content.decode()


def test_patch_changes_enabled_filter_input_and_version(api, workflow) -> None:
    trigger(api, version=1)
    workflow_version_create(workflow=workflow, definition=ECHO)
    body = {
        "enabled": False,
        "filter": "event.data.plan == 'pro'",
        "input": {"u": "{{ event.data.id }}"},
    }
    response = api.patch("/triggers/welcome", body, format="json")
    assert response.status_code == 200, response.content
    shown = response.json()
    assert {k: shown[k] for k in body} == body
    assert shown["version"] == 1  # absent: unchanged
    assert publish(api, "user.signed_up", {"id": 1, "plan": "pro"})["executions"] == []
    changed = api.patch("/triggers/welcome", {"enabled": True, "version": 2}, format="json")
    assert changed.json()["version"] == 2
    assert publish(api, "user.signed_up", {"id": 2, "plan": "free"})["executions"] == []
    (started,) = publish(api, "user.signed_up", {"id": 3, "plan": "pro"})["executions"]
    execution = Execution.objects.get(pk=started)
    assert (execution.input, execution.version.version) == ({"u": 3}, 2)
    # null: the latest version, and the event's data as the input; "" filters nothing.
    body = {"version": None, "input": None, "filter": ""}
    unpinned = api.patch("/triggers/welcome", body, format="json").json()
    assert (unpinned["version"], unpinned["input"], unpinned["filter"]) == (None, None, "")
    (started,) = publish(api, "user.signed_up", {"id": 4})["executions"]
    assert Execution.objects.get(pk=started).input == {"id": 4}
    assert api.patch("/triggers/welcome", {}, format="json").status_code == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"filter": "input.x == `1`"}, "filter"),
        ({"filter": "event.data.["}, "filter"),
        ({"filter": 3}, "filter"),
        ({"input": {"x": "{{ secrets.TOKEN }}"}}, "input"),
        ({"version": 9}, "version"),
        ({"version": 0}, "version"),
        ({"version": "1"}, "version"),
        ({"enabled": "yes"}, "enabled"),
        ({"event": "user.left"}, "event"),
        ({"name": "other"}, "name"),
        ({"workflow": "on-signup"}, "workflow"),
    ],
)
def test_a_bad_patch_is_a_400_naming_the_field_and_changes_nothing(
    api, workflow, body, field
) -> None:
    before = trigger(api, filter="event.data.id > `0`")
    response = api.patch("/triggers/welcome", {"enabled": False, **body}, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert api.get("/triggers/welcome").json() == before


def test_patch_of_an_unknown_trigger_is_404_and_needs_change_trigger(api, workflow) -> None:
    missing = api.patch("/triggers/nobody", {"enabled": False}, format="json")
    assert missing.status_code == 404
    assert "nobody" in missing.json()["detail"]
    trigger(api)
    viewer = get_user_model().objects.create_user("watcher")
    viewer.groups.set(Group.objects.filter(name="viewer"))
    client = APIClient()
    client.force_authenticate(viewer)
    assert client.get("/triggers/welcome").status_code == 200
    assert client.patch("/triggers/welcome", {"enabled": False}, format="json").status_code == 403
    assert Trigger.objects.get(name="welcome").enabled is True


def test_the_admin_enables_and_disables_selected_triggers(api, workflow, admin_client) -> None:
    trigger(api)
    trigger(api, name="vip")
    trigger(api, name="off", enabled=False)
    page = "/admin/executions/trigger/"
    listed = admin_client.get(page).content.decode()
    assert "Disable selected triggers" in listed
    assert "Enable selected triggers" in listed
    pks = [Trigger.objects.get(name=name).pk for name in ("welcome", "off")]
    off = {"action": "disable_selected", "_selected_action": pks}
    done = admin_client.post(page, off, follow=True)
    assert "1 trigger disabled: welcome; already disabled: off." in done.content.decode()
    enabled = dict(Trigger.objects.values_list("name", "enabled"))
    assert enabled == {"welcome": False, "vip": True, "off": False}
    assert len(publish(api, "user.signed_up", {"id": 1})["executions"]) == 1  # vip alone
    on = {"action": "enable_selected", "_selected_action": pks}
    admin_client.post(page, on)
    assert set(Trigger.objects.filter(enabled=True).values_list("name", flat=True)) == {
        "welcome",
        "vip",
        "off",
    }


def test_the_admin_change_form_validates_as_patch_does(api, workflow, admin_client) -> None:
    trigger(api, filter="event.data.id > `0`")
    page = f"/admin/executions/trigger/{Trigger.objects.get(name='welcome').pk}/change/"
    assert admin_client.get(page).status_code == 200
    shown = {"enabled": "on", "filter": "event.data.id > `0`", "input": "null"}
    for field, value in [("filter", "input.x == `1`"), ("input", '{"x": "{{ secrets.T }}"}')]:
        response = admin_client.post(page, {**shown, field: value})
        assert response.status_code == 200
        errors = response.context["adminform"].form.errors
        assert list(errors) == [field], errors
        assert "must read the event" in str(errors[field])
    assert Trigger.objects.get(name="welcome").filter == "event.data.id > `0`"
    changed = {"enabled": "", "filter": "event.data.plan == 'pro'", "input": '{"u": 1}'}
    assert admin_client.post(page, changed).status_code == 302
    saved = api.get("/triggers/welcome").json()
    assert (saved["enabled"], saved["filter"], saved["input"]) == (
        False,
        "event.data.plan == 'pro'",
        {"u": 1},
    )
    assert admin_client.get("/admin/executions/trigger/add/").status_code == 403  # API only
