"""workflows/rest/auth.py: the token's query carries the user's permissions (own and groups'),
read afresh on every request, with the answers Django's ModelBackend would give."""

from __future__ import annotations

import pytest
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group, Permission, User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.factories import make_version
from workflows.rest.auth import TokenAuthentication

pytestmark = pytest.mark.django_db

ONE_NODE = {"nodes": [{"id": "only", "type": "function", "function": "std.noop"}]}
ADD = "executions.add_execution"


def _permission(name: str) -> Permission:
    app_label, codename = name.split(".")
    return Permission.objects.get(content_type__app_label=app_label, codename=codename)


def _client(user: User) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def _post(client: APIClient) -> int:
    return client.post("/executions", {"workflow": "one"}, format="json").status_code


@pytest.fixture
def workflow() -> None:
    make_version(ONE_NODE, name="one")


def test_own_and_group_permissions_are_read_on_every_request(workflow) -> None:
    user = User.objects.create_user(username="plain")
    client = _client(user)
    assert _post(client) == 403
    user.user_permissions.add(_permission(ADD))  # its own
    assert _post(client) == 201
    user.user_permissions.clear()
    assert _post(client) == 403
    team = Group.objects.create(name="starters")
    team.permissions.add(_permission(ADD))
    user.groups.add(team)  # through a group
    assert _post(client) == 201
    team.permissions.clear()
    assert _post(client) == 403


def test_the_permissions_are_those_modelbackend_reads(workflow) -> None:
    user = User.objects.create_user(username="mixed")
    user.user_permissions.add(_permission("executions.view_execution"))
    user.groups.set(Group.objects.filter(name__in=["operator", "author"]))
    token = Token.objects.create(user=user)
    with CaptureQueriesContext(connection) as captured:
        found, found_token = TokenAuthentication().authenticate_credentials(token.key)
    assert len(captured.captured_queries) == 1  # the permissions come later on SQLite
    assert found_token.key == token.key
    assert found_token.user is found
    assert (found.pk, found.username, found.is_active) == (user.pk, "mixed", True)
    with CaptureQueriesContext(connection) as captured:
        held = found.get_all_permissions()
    if connection.vendor == "postgresql":
        assert not captured.captured_queries  # read with the token
    fresh = User.objects.get(pk=user.pk)
    assert held == ModelBackend().get_all_permissions(fresh)
    assert len(held) > 1


def test_unknown_token_inactive_user_and_superuser(workflow) -> None:
    anonymous = APIClient()
    anonymous.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert _post(anonymous) == 401
    inactive = User.objects.create_user(username="gone", is_active=False)
    inactive.user_permissions.add(_permission(ADD))
    assert _post(_client(inactive)) == 401
    root = User.objects.create_user(username="root", is_superuser=True)
    response = _client(root).post("/executions", {"workflow": "one"}, format="json")
    assert response.status_code == 201
    assert response.json()["created_by"] == "root"
