"""Workflow-level concurrency keys and execution priority through the API, on the
orchestrator alone: approval nodes hold an execution running with no worker, and an
approval answer ends it. The `admit` message an ending sends after commit is not sent in
these (rolled-back) tests: they run its service, admission.admit, where it would run.
Real workers, Redis and many executions at once: tests/integration/test_concurrency.py."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from executions import messages
from executions.models import Attempt, Event, Execution, Timer, TimerKind
from executions.services import admission, sweep
from executions.services.timers import timer_fire
from tests.factories import events

pytestmark = pytest.mark.django_db

GATE = {"nodes": [{"id": "gate", "type": "approval"}, {"id": "after", "type": "approval"}]}
LIMITED = {**GATE, "concurrency": {"key": "{{ input.customer }}", "limit": 2}}


def create(api, definition: dict[str, Any]) -> str:
    name = f"wf-{uuid.uuid4().hex[:10]}"
    response = api.post("/workflows", {"name": name, "definition": definition}, format="json")
    assert response.status_code == 201, response.content
    return name


def post(api, workflow: str, input: Any = None, **extra: Any):
    body = {"workflow": workflow, "input": input if input is not None else {}, **extra}
    return api.post("/executions", body, format="json")


def started(api, workflow: str, customer: str = "acme", **extra: Any) -> dict[str, Any]:
    response = post(api, workflow, {"customer": customer}, **extra)
    assert response.status_code == 201, response.content
    return response.json()


def status(execution: dict[str, Any]) -> str:
    return Execution.objects.get(pk=execution["id"]).status


def finish(api, execution: dict[str, Any]) -> None:
    """Approve both gates: the execution succeeds; then what its `admit` message does."""
    for node in ("gate", "after"):
        response = api.post(
            f"/executions/{execution['id']}/tasks/{node}/approve", {}, format="json"
        )
        assert response.status_code == 202, response.content
    row = Execution.objects.get(pk=execution["id"])
    assert row.status == "succeeded"
    admission.admit(workflow_id=row.workflow_id, key=row.concurrency_key)


@pytest.mark.parametrize(
    ("concurrency", "field", "message"),
    [
        (5, "concurrency", "must be an object"),
        ({"key": "{{ input.c }}"}, "concurrency.limit", "must be an integer"),
        ({"key": "{{ input.c }}", "limit": 0}, "concurrency.limit", "between 1 and"),
        ({"key": "{{ input.c }}", "limit": True}, "concurrency.limit", "must be an integer"),
        ({"limit": 2}, "concurrency.key", "a template over the input"),
        ({"key": "", "limit": 2}, "concurrency.key", "a template over the input"),
        ({"key": "{{ input.( }}", "limit": 2}, "concurrency.key", "invalid expression"),
        ({"key": "{{ nodes.gate.output }}", "limit": 2}, "concurrency.key", "input only"),
        ({"key": "{{ secrets.TOKEN }}", "limit": 2}, "concurrency.key", "secrets"),
        ({"key": "x", "limit": 2, "per": "day"}, "concurrency.per", "unknown field"),
    ],
)
def test_a_bad_concurrency_spec_is_400_naming_its_field(api, concurrency, field, message) -> None:
    body = {"name": "limited", "definition": {**GATE, "concurrency": concurrency}}
    response = api.post("/workflows", body, format="json")
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert any(e["field"] == field and message in e["message"] for e in errors), errors


@pytest.mark.parametrize("priority", [-1, 10, "5", 2.5, True, None])
def test_a_bad_priority_is_400_naming_it(api, priority) -> None:
    workflow = create(api, GATE)
    response = post(api, workflow, priority=priority)
    assert response.status_code == 400, response.content
    assert "priority" in response.json()
    assert not Execution.objects.exists()


@pytest.mark.parametrize(
    ("input", "message"),
    [
        ({}, "rendered null"),
        ({"customer": ""}, "rendered an empty string"),
        ({"customer": {"id": 1}}, "rendered an object"),
        ({"customer": "x" * 256}, "at most 255"),
        ({"customer": "a"} | {"n": 1}, None),
    ],
)
def test_an_input_the_key_cannot_be_rendered_from_is_400(api, input, message) -> None:
    workflow = create(api, LIMITED)
    response = post(api, workflow, input)
    if message is None:
        assert response.status_code == 201, response.content
        return
    assert response.status_code == 400, response.content
    (error,) = response.json()["input"]
    assert "concurrency.key '{{ input.customer }}'" in error
    assert message in error
    assert not Execution.objects.exists()


def test_the_limit_holds_the_rest_pending_and_admits_them_first_in_first_out(api) -> None:
    workflow = create(api, LIMITED)
    first, second = started(api, workflow), started(api, workflow)
    waiting = [started(api, workflow) for _ in range(3)]
    other = started(api, workflow, customer="globex")  # another key: its own room
    assert [status(e) for e in (first, second, other)] == ["running"] * 3
    for execution in waiting:
        assert (execution["status"], execution["held"]) == ("pending", True)
        assert execution["concurrency_key"] == "acme"
        assert not Event.objects.filter(execution_id=execution["id"]).exists()
    assert (first["held"], first["concurrency_key"]) == (False, "acme")

    finish(api, first)
    assert [status(e) for e in waiting] == ["running", "pending", "pending"]
    assert Execution.objects.get(pk=waiting[0]["id"]).held is False
    # A lost `admit` message changes nothing: the next admission finds the key full.
    admission.admit(workflow_id=Execution.objects.get(pk=first["id"]).workflow_id, key="acme")
    assert [status(e) for e in waiting] == ["running", "pending", "pending"]
    finish(api, second)
    finish(api, waiting[0])
    assert [status(e) for e in waiting] == ["succeeded", "running", "running"]
    assert status(other) == "running"


def test_why_names_the_key_and_limit_for_every_node_of_a_held_execution(api) -> None:
    workflow = create(api, LIMITED)
    started(api, workflow), started(api, workflow)
    first_held, second_held = started(api, workflow), started(api, workflow)
    response = api.get(f"/executions/{second_held['id']}/why")
    assert response.status_code == 200, response.content
    entries = response.json()
    assert [e["node_id"] for e in entries] == ["gate", "after"]
    for entry in entries:
        (reason,) = entry["reasons"]
        assert reason["code"] == "concurrency_limit"
        assert (reason["key"], reason["limit"], reason["running"]) == ("acme", 2, 2)
        assert reason["ahead"] == 1
        assert "'acme' has 2 of 2 executions running" in reason["message"]
    one = api.get(f"/executions/{first_held['id']}/tasks/after/why").json()
    assert [r["code"] for r in one["reasons"]] == ["concurrency_limit"]
    assert one["reasons"][0]["ahead"] == 0


def test_cancel_of_a_held_execution_ends_it_and_frees_nothing(api) -> None:
    workflow = create(api, LIMITED)
    running = [started(api, workflow), started(api, workflow)]
    held, behind = started(api, workflow), started(api, workflow)
    response = api.post(f"/executions/{held['id']}/cancel")
    assert response.status_code == 202, response.content
    row = Execution.objects.get(pk=held["id"])
    assert (row.status, row.held) == ("cancelled", True)  # held: it never started
    assert not events(row, "workflow_started")
    admission.admit(workflow_id=row.workflow_id, key="acme")
    assert [status(e) for e in running] == ["running", "running"]
    assert status(behind) == "pending"
    # Nothing to retry in an execution that never started.
    refused = api.post(f"/executions/{held['id']}/retry")
    assert refused.status_code == 409, refused.content
    assert "replay it instead" in refused.json()["detail"]
    finish(api, running[0])
    assert status(behind) == "running"


def test_pause_of_a_held_execution_is_409(api) -> None:
    workflow = create(api, {**LIMITED, "concurrency": {"key": "all", "limit": 1}})
    started(api, workflow)
    held = started(api, workflow)
    response = api.post(f"/executions/{held['id']}/pause")
    assert response.status_code == 409, response.content
    assert "pending" in response.json()["detail"]


def test_retry_is_409_naming_key_and_limit_while_the_key_is_full(api) -> None:
    workflow = create(api, {**LIMITED, "concurrency": {"key": "{{ input.customer }}", "limit": 1}})
    first = started(api, workflow)
    assert api.post(f"/executions/{first['id']}/cancel").status_code == 202
    admission.admit(workflow_id=Execution.objects.get(pk=first["id"]).workflow_id, key="acme")
    second = started(api, workflow)
    assert status(second) == "running"
    refused = api.post(f"/executions/{first['id']}/retry")
    assert refused.status_code == 409, refused.content
    detail = refused.json()["detail"]
    assert "concurrency key 'acme' of this workflow is full (1 of 1 running" in detail
    finish(api, second)
    retried = api.post(f"/executions/{first['id']}/retry")
    assert retried.status_code == 202, retried.content
    assert status(first) == "running"
    # While the retried one runs, a new start waits its turn.
    third = started(api, workflow)
    assert status(third) == "pending"


def test_replay_goes_through_the_key_and_keeps_the_priority(api) -> None:
    workflow = create(api, {**LIMITED, "concurrency": {"key": "{{ input.customer }}", "limit": 1}})
    source = started(api, workflow, priority=7)
    assert source["priority"] == 7
    replay = api.post(f"/executions/{source['id']}/replay", {}, format="json")
    assert replay.status_code == 201, replay.content
    body = replay.json()
    assert (body["status"], body["held"], body["priority"]) == ("pending", True, 7)
    finish(api, source)
    assert status(body) == "running"


def test_a_start_at_execution_waits_for_its_time_then_for_its_key(api) -> None:
    workflow = create(api, {**LIMITED, "concurrency": {"key": "{{ input.customer }}", "limit": 1}})
    running = started(api, workflow)
    later = started(api, workflow, start_at=(timezone.now() + timedelta(hours=1)).isoformat())
    assert (later["status"], later["held"]) == ("pending", False)
    reasons = api.get(f"/executions/{later['id']}/why").json()[0]["reasons"]
    assert [r["code"] for r in reasons] == ["timer"]
    timer = Timer.objects.get(execution_id=later["id"], kind=TimerKind.START)
    Timer.objects.filter(pk=timer.pk).update(due_at=timezone.now())
    assert timer_fire(timer_id=timer.pk)
    row = Execution.objects.get(pk=later["id"])
    assert (row.status, row.held) == ("pending", True)
    finish(api, running)
    assert status(later) == "running"


def test_the_sweeper_admits_what_a_lost_message_left_held(api) -> None:
    workflow = create(api, {**LIMITED, "concurrency": {"key": "{{ input.customer }}", "limit": 1}})
    first = started(api, workflow)
    held = started(api, workflow)
    for node in ("gate", "after"):
        api.post(f"/executions/{first['id']}/tasks/{node}/approve", {}, format="json")
    assert status(first) == "succeeded"
    assert status(held) == "pending"  # its admit message was never sent
    report = sweep.sweep()
    assert report.admitted == 1
    assert status(held) == "running"
    assert sweep.sweep().admitted == 0


def test_priority_is_stored_shown_and_defaults_to_0(api) -> None:
    workflow = create(api, GATE)
    assert started(api, workflow)["priority"] == 0
    assert started(api, workflow, priority=9)["priority"] == 9
    plain = started(api, workflow)
    assert (plain["concurrency_key"], plain["held"]) == ("", False)


def test_the_sweeper_republishes_the_highest_priority_first(api, monkeypatch, settings) -> None:
    settings.WORKFLOW_REPUBLISH_AFTER_SECONDS = 1
    workflow = create(api, {"nodes": [{"id": "a", "type": "function", "function": "std.noop"}]})
    ids = {p: started(api, workflow, priority=p)["id"] for p in (2, 9, 0, 5)}
    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(
        sweep.messages,
        "publish_attempt",
        lambda pk, priority=0, **_: sent.append((pk, priority)),
    )
    later = timezone.now() + timedelta(seconds=30)
    sweep._republish_lost(sweep.SweepReport(), later, [])
    attempt_of = {
        Attempt.objects.get(execution_id=ids[p]).pk: p for p in ids
    }  # attempt -> its execution's priority
    assert [attempt_of[pk] for pk, _ in sent] == [9, 5, 2, 0]
    assert [priority for _, priority in sent] == [9, 5, 2, 0]


def test_the_schema_documents_priority_and_the_concurrency_fields(api) -> None:
    schema = api.get("/schema", {"format": "json"}).json()
    components = schema["components"]["schemas"]
    create_body = components["ExecutionCreateRequest"]["properties"]["priority"]
    assert (create_body["minimum"], create_body["maximum"]) == (0, 9)
    shown = components["Execution"]["properties"]
    assert {"priority", "concurrency_key", "held"} <= set(shown)
    concurrency = components["Definition"]["properties"]["concurrency"]
    assert concurrency["required"] == ["key", "limit"]


def test_the_console_shows_the_key_the_held_state_and_the_priority(api, admin_client) -> None:
    workflow = create(api, {**LIMITED, "concurrency": {"key": "{{ input.customer }}", "limit": 1}})
    started(api, workflow)
    held = started(api, workflow, priority=4)
    response = admin_client.get(f"/admin/executions/execution/{held['id']}/change/")
    assert response.status_code == 200
    html = response.content.decode()
    assert '<dd id="wf-priority">4</dd>' in html
    assert 'id="wf-concurrency">acme · <span class="wf-badge wf-pending"' in html
    reason = (
        '<div class="wf-why" data-code="concurrency_limit">the workflow&#x27;s concurrency '
        "key &#x27;acme&#x27; has 1 of 1 executions running; it is next"
    )
    assert html.count(reason) == 2  # both nodes


def test_admission_reads_on_past_a_page_while_all_it_read_could_start(api, monkeypatch) -> None:
    monkeypatch.setattr(admission, "QUEUE_READ", 2)
    workflow = create(api, {**LIMITED, "concurrency": {"key": "{{ input.customer }}", "limit": 3}})
    running = [started(api, workflow) for _ in range(3)]
    held = [started(api, workflow) for _ in range(4)]
    for execution in running:
        for node in ("gate", "after"):
            path = f"/executions/{execution['id']}/tasks/{node}/approve"
            assert api.post(path, {}, format="json").status_code == 202
    assert [status(e) for e in held] == ["pending"] * 4
    workflow_id = Execution.objects.get(pk=held[0]["id"]).workflow_id
    assert admission.admit(workflow_id=workflow_id, key="acme") == 3
    assert [status(e) for e in held] == ["running"] * 3 + ["pending"]
    why = api.get(f"/executions/{held[3]['id']}/why").json()[0]["reasons"][0]
    assert (why["running"], why["ahead"]) == (3, 0)


def test_a_starter_with_no_one_to_answer_gets_a_failed_execution_naming_the_key(api) -> None:
    """Schedules, triggers and parents start through execution_start: an input the key
    cannot be rendered from fails that execution (never the loop that started it)."""
    from executions.services.start import execution_start
    from workflows.models import WorkflowVersion

    workflow = create(api, LIMITED)
    version = WorkflowVersion.objects.get(workflow__name=workflow)
    execution, created = execution_start(version=version, input={"other": 1}, by="schedule:1")
    assert created
    assert execution.status == "failed"
    assert "concurrency.key '{{ input.customer }}' rendered null" in execution.error["message"]
    assert execution.held is False


def test_a_held_replay_keeps_the_results_it_reuses_until_admitted(api) -> None:
    workflow = create(api, {**LIMITED, "concurrency": {"key": "{{ input.customer }}", "limit": 1}})
    source = started(api, workflow)
    gate = f"/executions/{source['id']}/tasks/gate/approve"
    assert api.post(gate, {"data": {"ok": 1}}, format="json").status_code == 202
    replay = api.post(
        f"/executions/{source['id']}/replay", {"from_node": "after"}, format="json"
    ).json()
    assert (replay["status"], replay["held"]) == ("pending", True)
    assert not Event.objects.filter(execution_id=replay["id"]).exists()
    finish_after = f"/executions/{source['id']}/tasks/after/approve"
    assert api.post(finish_after, {}, format="json").status_code == 202
    row = Execution.objects.get(pk=source["id"])
    admission.admit(workflow_id=row.workflow_id, key="acme")
    replayed = Execution.objects.get(pk=replay["id"])
    assert (replayed.status, replayed.held, replayed.held_start) == ("running", False, None)
    (reused,) = events(replayed, "task_completed", "gate")
    assert reused.data["reused_from"] == source["id"]
    assert (
        reused.data["output"]
        == Event.objects.get(execution_id=source["id"], type="task_completed", node_id="gate").data[
            "output"
        ]
    )


def test_an_empty_idempotency_key_is_400_as_the_schema_says(api) -> None:
    workflow = create(api, GATE)
    body = {"workflow": workflow, "input": {}}
    response = api.post("/executions", body, format="json", HTTP_IDEMPOTENCY_KEY="")
    assert response.status_code == 400, response.content
    assert "Idempotency-Key" in response.json()
    event = api.post("/events", {"key": "k", "data": None}, format="json", HTTP_IDEMPOTENCY_KEY="")
    assert event.status_code == 400, event.content
    assert not Execution.objects.exists()


def test_a_start_at_execution_queues_behind_those_held_before_its_time_came(api) -> None:
    workflow = create(api, {**LIMITED, "concurrency": {"key": "{{ input.customer }}", "limit": 1}})
    running = started(api, workflow)
    later = started(api, workflow, start_at=(timezone.now() + timedelta(hours=1)).isoformat())
    waiting = started(api, workflow)  # created after `later`, held before its time comes
    timer = Timer.objects.get(execution_id=later["id"], kind=TimerKind.START)
    Timer.objects.filter(pk=timer.pk).update(due_at=timezone.now())
    assert timer_fire(timer_id=timer.pk)

    def ahead(execution: dict[str, Any]) -> int:
        (reason,) = api.get(f"/executions/{execution['id']}/why").json()[0]["reasons"]
        return reason["ahead"]

    assert (ahead(waiting), ahead(later)) == (0, 1)
    finish(api, running)
    assert (status(waiting), status(later)) == ("running", "pending")
    finish(api, waiting)
    assert status(later) == "running"


def test_the_sweeper_goes_round_every_waiting_key_one_query_a_page(api, monkeypatch) -> None:
    """Keys that are full (and so not due) never keep a key with room from its turn, and a
    page of them costs one query, not two per key."""
    monkeypatch.setattr(sweep, "BATCH", 2)
    monkeypatch.setattr(sweep, "_admission_cursor", None, raising=False)
    one = {**LIMITED, "concurrency": {"key": "{{ input.customer }}", "limit": 1}}
    full = create(api, one)
    for customer in "abcde":
        started(api, full, customer), started(api, full, customer)
    lost = create(api, one)  # its key sorts after all of the full ones
    first, held = started(api, lost, "z"), started(api, lost, "z")
    for node in ("gate", "after"):
        api.post(f"/executions/{first['id']}/tasks/{node}/approve", {}, format="json")
    assert (status(first), status(held)) == ("succeeded", "pending")  # its admit was lost

    with CaptureQueriesContext(connection) as queries:
        sweep._admit_held(sweep.SweepReport(), timezone.now(), [])
    assert len(queries) == 1, [q["sql"] for q in queries]
    assert status(held) == "pending"  # not in the first page
    ticks = [sweep.sweep().admitted for _ in range(2)]
    assert ticks == [0, 1]
    assert status(held) == "running"


def test_cancelling_a_held_head_sends_admit_for_the_next_that_fits(
    api, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    sent: list[tuple[int, str]] = []
    monkeypatch.setattr(messages, "publish_admit", lambda *key: sent.append(key))
    workflow = create(api, {**LIMITED, "concurrency": {"key": "{{ input.customer }}", "limit": 1}})
    started(api, workflow)
    head = started(api, workflow)
    larger = {**LIMITED, "concurrency": {"key": "{{ input.customer }}", "limit": 3}}
    response = api.post(f"/workflows/{workflow}/versions", {"definition": larger}, format="json")
    assert response.status_code == 201, response.content
    behind = started(api, workflow)  # room under its own limit, but behind the head
    assert status(behind) == "pending"

    with django_capture_on_commit_callbacks(execute=True):
        assert api.post(f"/executions/{head['id']}/cancel").status_code == 202
    workflow_id = Execution.objects.get(pk=head["id"]).workflow_id
    assert sent == [(workflow_id, "acme")]
    admission.admit(workflow_id=workflow_id, key="acme")  # what that message does
    assert status(behind) == "running"
