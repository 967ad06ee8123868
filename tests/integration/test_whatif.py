"""What-if replay end to end: the API, real workers, a recorded execution replayed against
a new version (dry run first, then for real), and check_version over it."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from executions.models import Execution
from tests.factories import events
from tests.integration.engine import Engine, assert_replayable

V1: dict[str, Any] = {
    "nodes": [
        {
            "id": "fetch",
            "type": "function",
            "function": "std.echo",
            "input": {"x": "{{ input.x }}"},
        },
        {
            "id": "shape",
            "type": "function",
            "function": "std.echo",
            "depends_on": ["fetch"],
            "input": {"shaped": "{{ nodes.fetch.output.x }}"},
        },
    ],
    "output": "{{ nodes.shape.output }}",
}

#: V1 plus a node after `shape`, and a changed input for a new branch after `fetch`.
V2: dict[str, Any] = {
    "nodes": [
        *V1["nodes"],
        {
            "id": "notify",
            "type": "function",
            "function": "std.echo",
            "depends_on": ["shape"],
            "input": {"sent": "{{ nodes.shape.output.shaped }}"},
        },
    ],
    "output": "{{ nodes.notify.output }}",
}


@pytest.fixture
def api(live: Engine) -> APIClient:
    name = f"whatif-{uuid.uuid4().hex[:8]}"
    admin = get_user_model().objects.create_superuser(name, f"{name}@example.com", "pw-" + name)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=admin).key}")
    return client


def test_a_recorded_execution_replayed_against_a_new_version(live: Engine, api: APIClient) -> None:
    name = f"whatif-{uuid.uuid4().hex[:10]}"
    assert (
        api.post("/workflows", {"name": name, "definition": V1}, format="json").status_code == 201
    )
    started = api.post("/executions", {"workflow": name, "input": {"x": 5}}, format="json").json()
    original = live.wait(started["id"])
    assert original.status == "succeeded", events(original)
    workflow_id = started["workflow_id"]
    made = api.post(f"/workflows/{workflow_id}/versions", {"definition": V2}, format="json")
    assert made.status_code == 201, made.content

    url = f"/executions/{original.pk}/replay"
    dry = api.post(url, {"version": 2, "dry_run": True}, format="json")
    assert dry.status_code == 200, dry.content
    report = dry.json()
    completed = events(original, "workflow_completed")[0]
    assert report["diverges_at"] == completed.seq
    assert report["decisions"][-1]["would_decide"]["node_id"] == "notify"
    assert report["reused"] == ["fetch", "shape"]
    assert report["would_run"] == ["notify"]
    assert Execution.objects.filter(replay_of=original).count() == 0

    call_command("check_version", name, "1", "--last", "3")
    with pytest.raises(CommandError, match="diverge"):
        call_command("check_version", name, "2", "--last", "3")

    created = api.post(url, {"version": 2}, format="json")
    assert created.status_code == 201, created.content
    replay = live.wait(created.json()["id"])
    assert replay.status == "succeeded", events(replay)
    assert replay.output == {"sent": 5}
    assert replay.version.version == 2
    # Only the new node ran on a worker; the others' results are the recorded ones.
    assert [e.node_id for e in events(replay, "task_started")] == ["notify"]
    reused = events(replay, "task_completed")[:2]
    assert [(e.node_id, e.data["reused_from"]) for e in reused] == [
        ("fetch", str(original.pk)),
        ("shape", str(original.pk)),
    ]
    assert_replayable(replay)

    # Another input: the very first decision reads it, so nothing is reused.
    other = api.post(url, {"version": 2, "input": {"x": 6}}, format="json").json()
    rerun = live.wait(other["id"])
    assert rerun.output == {"sent": 6}
    ran = sorted(str(e.node_id) for e in events(rerun, "task_started"))
    assert ran == ["fetch", "notify", "shape"]
    assert_replayable(rerun)
