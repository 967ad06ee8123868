"""POST /executions/{id}/replay with `version`/`input`/`dry_run`, replay_execution
--against-version and check_version, without workers (approval and delay nodes run in the
orchestrator alone)."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from executions.models import Event, Execution
from executions.services.control import signal_send
from tests.api.test_control import APPROVAL
from tests.factories import events, start
from tests.integration.corruption import GARBAGE, set_definition
from workflows.models import WorkflowVersion

pytestmark = pytest.mark.django_db

V1 = APPROVAL


def approved() -> Execution:
    execution = start(V1, {"who": "ada"})
    signal_send(execution_id=execution.pk, node_id="review", decision="approve", data={"n": 1})
    execution.refresh_from_db()
    assert execution.status == "succeeded"
    return execution


def add_version(execution: Execution, definition: dict) -> int:
    number = execution.workflow.versions.count() + 1
    WorkflowVersion.objects.create(
        workflow=execution.workflow, version=number, definition=definition
    )
    return number


def v2_with_a_new_step() -> dict:
    nodes = [
        *V1["nodes"],
        {
            "id": "cool",
            "type": "delay",
            "seconds": 1,
            "depends_on": ["hold"],
            "trigger_rule": "all_done",
        },
    ]
    return {**V1, "nodes": nodes}


def test_dry_run_reports_the_divergence_and_changes_nothing(api) -> None:
    execution = approved()
    number = add_version(execution, v2_with_a_new_step())
    before = (Execution.objects.count(), Event.objects.count())
    url = f"/executions/{execution.pk}/replay"
    response = api.post(url, {"version": number, "dry_run": True}, format="json")
    assert response.status_code == 200, response.content
    report = response.json()
    last = events(execution)[-1]
    assert last.type == "workflow_completed"
    assert report["diverges_at"] == last.seq
    assert report["decisions"][-1]["would_decide"]["type"] == "timer_started"
    assert report["decisions"][-1]["would_decide"]["node_id"] == "cool"
    assert report["decisions"][-1]["recorded"]["type"] == "workflow_completed"
    assert report["reused"] == ["review"]
    assert report["would_run"] == ["hold", "cool"]
    assert (Execution.objects.count(), Event.objects.count()) == before
    same = api.post(url, {"dry_run": True}, format="json").json()
    assert same["diverges_at"] is None
    assert same["reused"] == ["review"]


def test_replay_on_another_version_reuses_what_the_report_marks(api) -> None:
    execution = approved()
    number = add_version(execution, v2_with_a_new_step())
    response = api.post(f"/executions/{execution.pk}/replay", {"version": number}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["version"], body["replay_of"], body["input"]) == (
        number,
        str(execution.pk),
        {"who": "ada"},
    )
    replay = Execution.objects.get(pk=body["id"])
    reused = events(replay, "task_completed", "review")
    assert [e.data["reused_from"] for e in reused] == [str(execution.pk)]
    assert reused[0].data["output"]["data"] == {"n": 1}
    # The approval was not asked again; the new delay node is running.
    assert events(replay, "task_scheduled", "review") == []
    assert [e.node_id for e in events(replay, "timer_started")] == ["cool"]
    call_command("replay_execution", str(replay.pk), "--verify", "--quiet")


def test_another_input_is_replayed_from_where_it_is_read(api) -> None:
    execution = approved()
    url = f"/executions/{execution.pk}/replay"
    report = api.post(url, {"input": {"who": "bob"}, "dry_run": True}, format="json").json()
    # Nothing in V1 reads the input: the same decisions, and the approval is reused.
    assert report["diverges_at"] is None
    created = api.post(url, {"input": None}, format="json").json()
    assert created["input"] == {}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"version": 9, "dry_run": True}, "version"),
        ({"version": 9}, "version"),
        ({"version": 0, "dry_run": True}, "version"),
        ({"version": "2"}, "version"),
        ({"dry_run": "yes"}, "dry_run"),
    ],
)
def test_bad_replay_requests_are_400_naming_the_field(api, body, field) -> None:
    execution = approved()
    response = api.post(f"/executions/{execution.pk}/replay", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert Execution.objects.count() == 1


def test_a_candidate_that_cannot_be_decided_is_a_400_naming_the_version(api) -> None:
    execution = approved()
    number = add_version(execution, v2_with_a_new_step())
    pk = WorkflowVersion.objects.get(workflow=execution.workflow, version=number).pk
    set_definition(pk, GARBAGE)  # stored behind the API's back, as a broken migration would
    url = f"/executions/{execution.pk}/replay"
    response = api.post(url, {"version": number, "dry_run": True}, format="json")
    assert response.status_code == 400, response.content
    message = response.json()["version"][0]
    assert message.startswith(f"version {number} cannot be replayed against this history"), message
    assert "nodes" in message, message


def test_replay_execution_against_version_prints_the_same_report(api, capsys) -> None:
    execution = approved()
    number = add_version(execution, v2_with_a_new_step())
    call_command("replay_execution", str(execution.pk), "--against-version", str(number))
    printed = json.loads(capsys.readouterr().out)
    url = f"/executions/{execution.pk}/replay"
    assert printed == api.post(url, {"version": number, "dry_run": True}, format="json").json()
    with pytest.raises(CommandError, match="no version 7"):
        call_command("replay_execution", str(execution.pk), "--against-version", "7")
    with pytest.raises(CommandError, match="--input is not JSON"):
        call_command(
            "replay_execution", str(execution.pk), "--against-version", "1", "--input", "{nope"
        )


def test_check_version_exits_1_when_any_recent_execution_would_diverge(capsys, tmp_path) -> None:
    execution = approved()
    name = execution.workflow.name
    same = add_version(execution, V1)
    call_command("check_version", name, str(same), "--last", "5")
    assert "1 of 1 executions unchanged" in capsys.readouterr().out
    changed = add_version(execution, v2_with_a_new_step())
    report = tmp_path / "report.json"
    with pytest.raises(CommandError, match="0 of 1 executions unchanged"):
        call_command("check_version", name, str(changed), "--json", str(report))
    assert "DIVERGES" in capsys.readouterr().out
    assert json.loads(report.read_text())[str(execution.pk)]["diverges_at"] is not None
    with pytest.raises(CommandError, match="no workflow named"):
        call_command("check_version", "ghost", "1")
    with pytest.raises(CommandError, match="no version 9"):
        call_command("check_version", name, "9")
