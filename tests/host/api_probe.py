"""The engine's API and the host's own, answered inside the host project
(tests/host/settings.py), printed as JSON for tests/api/test_host_defaults.py: run as
`python -m tests.host.api_probe` with DJANGO_SETTINGS_MODULE=tests.host.settings.

A process of its own because DRF reads REST_FRAMEWORK into its view classes when they are
imported: only a process that starts on the host's settings has views with the host's
defaults."""

from __future__ import annotations

import json
from typing import Any

import django

from tests.host.probe import host_celery_app

ECHO = {"nodes": [{"id": "a", "type": "function", "function": "std.echo", "input": "{{ input }}"}]}


def answer(response: Any) -> dict[str, Any]:
    """A response as the test reads it."""
    try:
        body = response.json()
    except (TypeError, ValueError):
        body = None
    return {
        "status": response.status_code,
        "body": body,
        "www_authenticate": response.get("WWW-Authenticate"),
        "content_type": response.get("Content-Type"),
    }


def observe() -> dict[str, Any]:
    from django.contrib.auth.models import Group, User
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    from executions.models import Attempt
    from executions.worker.runtime import run_task

    member = User.objects.create_user("member", password="pw-member")
    session = APIClient()
    session.force_login(member)
    member_token = APIClient()
    member_token.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=member).key}")
    operator = User.objects.create_user("operator")
    # The shipped roles exist after migrate, in the host's database too.
    operator.groups.set(Group.objects.filter(name__in=["viewer", "operator", "author"]))
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=operator).key}")

    seen: dict[str, Any] = {}
    seen["member"] = {
        path: answer(session.get(path))
        for path in ("/engine/executions", "/engine/workflows", "/engine/metrics")
    }
    seen["member_post"] = answer(session.post("/engine/executions", {"workflow": "x"}))
    seen["anonymous"] = answer(APIClient().get("/engine/executions"))
    for n in range(5):
        api.post("/engine/workflows", {"name": f"w{n}", "definition": ECHO}, format="json")
    seen["page"] = answer(api.get("/engine/workflows"))
    seen["page_of_2"] = answer(api.get("/engine/workflows", {"limit": 2}))
    seen["bad_limit"] = answer(api.get("/engine/workflows", {"limit": "many"}))
    seen["missing"] = answer(api.get("/engine/executions/00000000-0000-0000-0000-000000000000"))
    seen["form"] = answer(api.post("/engine/workflows", {"name": "f"}, format="multipart"))
    started = api.post("/engine/executions", {"workflow": "w0", "input": 7}, format="json")
    seen["started"] = answer(started)
    run_task(Attempt.objects.get(execution_id=started.json()["id"]).pk)
    seen["ran"] = answer(api.get(f"/engine/executions/{started.json()['id']}"))
    seen["schema"] = answer(APIClient().get("/engine/schema", {"format": "json"}))
    seen["docs"] = answer(APIClient().get("/engine/docs"))

    Group.objects.bulk_create(Group(name=f"team-{n}") for n in range(5))
    seen["shop"] = {
        "anonymous": answer(APIClient().get("/shop/teams")),
        "token": answer(member_token.get("/shop/teams")),
        "session": answer(session.get("/shop/teams")),
    }
    return seen


def main() -> dict[str, Any]:
    django.setup()
    # The host's Celery app, as its project package would make it: what the engine
    # publishes goes to its (in-memory) broker.
    host_celery_app()
    from django.db import connection
    from django.test.utils import setup_test_environment

    setup_test_environment()
    name = connection.creation.create_test_db(verbosity=0)
    try:
        return observe()
    finally:
        connection.creation.destroy_test_db(name, verbosity=0)


if __name__ == "__main__":
    print(json.dumps(main()))
