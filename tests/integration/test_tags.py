"""Tags on real workers: a sub-workflow inherits its parent's, and GET /executions?tag=
with two tags lists exactly the executions that have both."""

from __future__ import annotations

import uuid

from django.core.management import call_command

from executions.models import Event, Execution
from tests.factories import make_version
from tests.integration.engine import operator_client as api


def test_children_inherit_tags_and_the_list_filters_on_two(live) -> None:
    child = make_version(
        {"nodes": [{"id": "leaf", "type": "function", "function": "std.echo"}]}
    ).workflow.name
    parent = make_version(
        {"nodes": [{"id": "sub", "type": "workflow", "workflow": child}]}
    ).workflow.name
    client = api()
    run = uuid.uuid4().hex[:8]  # other tests' executions share the database

    def start(workflow: str, tags: dict[str, str]) -> str:
        body = {"workflow": workflow, "tags": tags}
        response = client.post("/executions", body, format="json")
        assert response.status_code == 201, response.content
        return response.json()["id"]

    tagged = start(parent, {"run": run, "team": "billing"})
    other_team = start(child, {"run": run, "team": "search"})
    done = [live.wait(pk) for pk in (tagged, other_team)]
    assert [e.status for e in done] == ["succeeded", "succeeded"]
    kid = live.wait(Execution.objects.get(parent_execution__pk=tagged).pk)
    assert kid.status == "succeeded"
    assert kid.tags == {"run": run, "team": "billing"}
    (started,) = Event.objects.filter(execution=kid, type="workflow_started")
    assert started.data["tags"] == {"run": run, "team": "billing"}
    shown = client.get(f"/executions/{kid.pk}").json()
    assert shown["tags"] == {"run": run, "team": "billing"}

    listed = client.get(f"/executions?tag=run:{run}&tag=team:billing")
    assert listed.status_code == 200, listed.content
    assert {e["id"] for e in listed.json()["results"]} == {tagged, str(kid.pk)}
    listed = client.get(f"/executions?tag=run:{run}&tag=team:search")
    assert [e["id"] for e in listed.json()["results"]] == [other_team]
    call_command("verify_logs", tagged, other_team, str(kid.pk))
