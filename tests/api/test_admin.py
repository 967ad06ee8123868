"""The admin shows who created workflows, versions, executions and schedules, and keeps
Django's model permissions (a staff user without them is refused)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

pytestmark = pytest.mark.django_db

ONE_NODE = {"nodes": [{"id": "only", "type": "function", "function": "std.noop"}]}
PAGES = (
    "/admin/workflows/workflowdefinition/",
    "/admin/workflows/workflowversion/",
    "/admin/executions/execution/",
    "/admin/executions/schedule/",
)


def test_changelists_show_who_created_each_row(api) -> None:
    created = api.post("/workflows", {"name": "audited", "definition": ONE_NODE}, format="json")
    assert created.status_code == 201
    assert api.post("/executions", {"workflow": "audited"}, format="json").status_code == 201
    body = {"workflow": "audited", "cron": "0 0 1 1 *", "enabled": False}
    assert api.post("/schedules", body, format="json").status_code == 201
    admin = Client()
    admin.force_login(User.objects.create_superuser("root", password="pw"))
    for page in PAGES:
        response = admin.get(page)
        assert response.status_code == 200, page
        html = response.content.decode()
        assert "column-created_by" in html, page
        assert ">operator<" in html, page


def test_staff_need_the_model_permissions(django_user_model) -> None:
    staff = django_user_model.objects.create_user("sam", password="pw", is_staff=True)
    client = Client()
    client.force_login(staff)
    assert client.get("/admin/executions/execution/").status_code == 403
    staff.groups.add(Group.objects.get(name="viewer"))
    client.force_login(User.objects.get(pk=staff.pk))
    assert client.get("/admin/executions/execution/").status_code == 200
