"""Permissions through the real API: every endpoint x role -> the status it
gives. Users hold exactly one shipped group (or none); a superuser has everything."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from executions.models import Execution
from executions.services.pools import pool_create
from executions.services.start import execution_start
from tests.factories import start
from workflows.rest import permissions
from workflows.roles import ROLES

pytestmark = pytest.mark.django_db

APPROVAL = {"nodes": [{"id": "review", "type": "approval"}]}
ONE_NODE = {"nodes": [{"id": "only", "type": "function", "function": "std.noop"}]}


def client_for(username: str, *groups: str, superuser: bool = False) -> APIClient:
    user = User.objects.create_user(username=username, is_superuser=superuser)
    user.groups.set(Group.objects.filter(name__in=groups))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


@pytest.fixture
def world(db) -> dict[str, Any]:
    """Two waiting executions of an approval workflow (one to approve, one to cancel) and
    a schedule of it."""
    execution = start(APPROVAL)
    other, _ = execution_start(version=execution.version, input={})
    author = client_for("setup-author", "author")
    schedule = author.post(
        "/schedules",
        {"workflow": execution.workflow_id, "cron": "0 0 1 1 *", "enabled": False},
        format="json",
    )
    assert schedule.status_code == 201, schedule.content
    pool_create(name="shared-api", slots=2)
    return {"execution": execution, "other": other, "schedule": schedule.json()["id"]}


def requests(world: dict[str, Any]) -> dict[str, tuple[str, str, Any]]:
    """One request per endpoint and method: (method, path, body). Bodies are valid, so the
    status says whether the permission let it through."""
    e = f"/executions/{world['execution'].pk}"
    wf = world["execution"].workflow_id
    name = f"new-{uuid.uuid4().hex[:8]}"
    return {
        "list workflows": ("get", "/workflows", None),
        "read workflow": ("get", f"/workflows/{wf}", None),
        "create workflow": ("post", "/workflows", {"name": name, "definition": ONE_NODE}),
        "list versions": ("get", f"/workflows/{wf}/versions", None),
        "add version": ("post", f"/workflows/{wf}/versions", {"definition": APPROVAL}),
        "list executions": ("get", "/executions", None),
        "start": ("post", "/executions", {"workflow": wf}),
        "read execution": ("get", e, None),
        "tasks": ("get", f"{e}/tasks", None),
        "task": ("get", f"{e}/tasks/review", None),
        "events": ("get", f"{e}/events", None),
        "state": ("get", f"{e}/state", None),
        "why": ("get", f"{e}/why", None),
        "task why": ("get", f"{e}/tasks/review/why", None),
        "pause": ("post", f"{e}/pause", None),
        "resume": ("post", f"{e}/resume", None),
        "replay": ("post", f"{e}/replay", {}),
        "bulk cancel": ("post", "/executions/bulk/cancel", {"ids": [str(uuid.UUID(int=0))]}),
        "bulk retry": ("post", "/executions/bulk/retry", {"ids": [str(uuid.UUID(int=0))]}),
        "approve": ("post", f"{e}/tasks/review/approve", {}),
        "cancel": ("post", f"/executions/{world['other'].pk}/cancel", None),
        "list schedules": ("get", "/schedules", None),
        "read schedule": ("get", f"/schedules/{world['schedule']}", None),
        "create schedule": ("post", "/schedules", {"workflow": wf, "cron": "0 0 1 1 *"}),
        "pause schedule": ("patch", f"/schedules/{world['schedule']}", {"enabled": False}),
        "metrics": ("get", "/metrics", None),
        "list pools": ("get", "/pools", None),
        "read pool": ("get", "/pools/shared-api", None),
        "create pool": ("post", "/pools", {"name": f"pool-{name}", "slots": 1}),
        "change pool": ("patch", "/pools/shared-api", {"slots": 3}),
        "delete schedule": ("delete", f"/schedules/{world['schedule']}", None),
    }


READS = {
    "list workflows",
    "read workflow",
    "list versions",
    "list executions",
    "read execution",
    "tasks",
    "task",
    "events",
    "state",
    "why",
    "task why",
    "list schedules",
    "read schedule",
    "metrics",
    "list pools",
    "read pool",
}
#: What each role may do beyond reading (every role reads).
ALLOWED: dict[str, set[str]] = {
    "viewer": READS,
    "operator": READS
    | {"start", "replay", "cancel", "pause", "resume", "bulk cancel", "bulk retry"},
    "approver": READS | {"approve"},
    "author": READS
    | {
        "create workflow",
        "add version",
        "create schedule",
        "pause schedule",
        "delete schedule",
        "create pool",
        "change pool",
    },
}


@pytest.mark.parametrize("role", [*ALLOWED, "none", "superuser"])
def test_every_endpoint_by_role(world, role: str) -> None:
    if role == "superuser":
        client, allowed = client_for("root", superuser=True), set(requests(world))
    else:
        client, allowed = client_for(f"user-{role}", role), ALLOWED.get(role, set())
    outcomes = {}
    for what, (method, path, body) in requests(world).items():  # in order: delete last
        response = getattr(client, method)(path, body, format="json")
        outcomes[what] = response.status_code
        if what in allowed:
            assert response.status_code < 400, (role, what, response.content[:300])
        else:
            assert response.status_code == 403, (role, what, response.content[:300])
            assert "needs the permission" in response.json()["detail"], response.json()
    assert outcomes  # the table ran


def test_anonymous_gets_401_everywhere_but_healthz_and_schema(world) -> None:
    anonymous = APIClient()
    for method, path, body in requests(world).values():
        assert getattr(anonymous, method)(path, body, format="json").status_code == 401, path
    for path in ("/healthz", "/schema", "/docs"):
        assert anonymous.get(path).status_code in (200, 503), path


def test_403_names_the_missing_permission(world) -> None:
    viewer = client_for("vera", "viewer")
    response = viewer.post(f"/executions/{world['execution'].pk}/cancel")
    assert response.status_code == 403
    assert "'executions.operate_execution'" in response.json()["detail"]
    assert "the 'operator' role" in response.json()["detail"]
    assert Execution.objects.get(pk=world["execution"].pk).status == "running"


def test_audit_records_who_did_it(world) -> None:
    operator = client_for("olga", "operator")
    wf = world["execution"].workflow_id
    started = operator.post("/executions", {"workflow": wf}, format="json").json()
    assert started["created_by"] == "olga"
    execution = Execution.objects.get(pk=started["id"])
    assert execution.created_by == "olga"
    assert execution.events.get(type="workflow_started").data["by"] == "olga"
    operator.post(f"/executions/{started['id']}/cancel")
    assert execution.events.get(type="workflow_cancel_requested").data["by"] == "olga"
    retried = operator.post(f"/executions/{started['id']}/retry", {}, format="json")
    assert retried.status_code == 202, retried.content
    assert execution.events.get(type="retry_requested").data["by"] == "olga"
    replay = operator.post(f"/executions/{started['id']}/replay", {}, format="json").json()
    assert replay["created_by"] == "olga"
    replayed = Execution.objects.get(pk=replay["id"])
    assert replayed.events.get(type="workflow_started").data["by"] == "olga"
    author = client_for("arthur", "author")
    version = author.post(f"/workflows/{wf}/versions", {"definition": ONE_NODE}, format="json")
    assert version.json()["created_by"] == "arthur"
    paused = author.patch(f"/schedules/{world['schedule']}", {"enabled": True}, format="json")
    assert paused.json()["updated_by"] == "arthur"
    schedule = APIClient()
    schedule.force_authenticate(User.objects.get(username="setup-author"))
    assert schedule.get(f"/schedules/{world['schedule']}").json()["created_by"] == "setup-author"


# --- approvers ------------------------------------------------------------------------


def _waiting(approvers: list[str]) -> Execution:
    return start({"nodes": [{"id": "review", "type": "approval", "approvers": approvers}]})


@pytest.mark.parametrize(
    ("approvers", "who", "groups", "status"),
    [
        (["group:finance"], "fiona", ("approver", "finance"), 202),
        (["group:finance"], "anna", ("approver",), 403),
        (["user:ada"], "ada", ("approver",), 202),
        (["user:ada"], "bob", ("approver", "finance"), 403),
        (["user:ada", "group:finance"], "fiona", ("approver", "finance"), 202),
        # Named, but without approve_task: the permission is needed too.
        (["user:ada"], "ada", ("viewer",), 403),
    ],
)
def test_approvers_by_group_and_by_user(approvers, who, groups, status) -> None:
    Group.objects.get_or_create(name="finance")
    execution = _waiting(approvers)
    client = client_for(who, *groups)
    for decision in ("reject", "approve"):
        response = client.post(
            f"/executions/{execution.pk}/tasks/review/{decision}", {}, format="json"
        )
        assert response.status_code == status, response.content
        if status == 403:
            assert "detail" in response.json()
        else:
            break
    execution.refresh_from_db()
    signals = execution.events.filter(type="signal_received")
    if status == 202:
        assert [s.data["by"] for s in signals] == [who]
    else:
        assert not signals.exists()
        assert execution.status == "running"


def test_a_superuser_may_answer_any_approval() -> None:
    execution = _waiting(["user:ada"])
    root = client_for("root", superuser=True)
    approve = f"/executions/{execution.pk}/tasks/review/approve"
    assert root.post(approve, {}, format="json").status_code == 202


# --- the rules table and the roles ------------------------------------------------------


def _routes(resolver: URLResolver | None = None) -> set[str]:
    names = set()
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            if entry.namespace != "admin":
                names |= _routes(entry)
        elif isinstance(entry, URLPattern) and entry.name:
            names.add(entry.name)
    return names


def test_every_api_route_has_a_rule_and_no_rule_is_stale() -> None:
    routes = _routes()
    assert routes - set(permissions.RULES) - permissions.PUBLIC == set()
    assert set(permissions.RULES) - routes == set()


def test_an_unmapped_route_is_refused(rf) -> None:
    assert permissions.required("no-such-route", "GET") is None
    assert permissions.required("execution-list", "HEAD") == permissions.required(
        "execution-list", "GET"
    )


def test_roles_exist_after_migrate_and_the_command_is_idempotent() -> None:
    before = {g.name: set(g.permissions.values_list("codename", flat=True)) for g in _roles()}
    assert set(before) == set(ROLES)
    call_command("create_roles", stdout=open("/dev/null", "w"))  # noqa: SIM115
    call_command("create_roles", stdout=open("/dev/null", "w"))  # noqa: SIM115
    after = {g.name: set(g.permissions.values_list("codename", flat=True)) for g in _roles()}
    assert after == before
    assert "operate_execution" in after["operator"]
    assert "approve_task" in after["approver"]
    assert "add_workflowversion" in after["author"]
    assert "add_execution" not in after["viewer"]


def test_roles_keep_permissions_an_administrator_added() -> None:
    viewer = Group.objects.get(name="viewer")
    extra = viewer.permissions.model.objects.get(codename="approve_task")
    viewer.permissions.add(extra)
    call_command("create_roles", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert viewer.permissions.filter(codename="approve_task").exists()


def _roles():
    return Group.objects.filter(name__in=ROLES).prefetch_related("permissions")
