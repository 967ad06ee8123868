"""The execution console in the admin, without workers (approval and delay nodes run in
the orchestrator alone): what the page shows, and who may press what."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from executions.console import actions
from executions.console.page import EVENTS_PER_PAGE
from executions.models import Event, Execution, Task
from tests.factories import start
from workflows.models import WorkflowVersion

pytestmark = pytest.mark.django_db

APPROVAL = {
    "nodes": [
        {"id": "review", "type": "approval"},
        {"id": "hold", "type": "delay", "seconds": 3600, "depends_on": ["review"]},
        {"id": "after", "type": "delay", "seconds": 1, "depends_on": ["hold"]},
        {"id": "side", "type": "delay", "seconds": 1, "depends_on": ["review"]},
    ]
}


def client_for(username: str, *groups: str, superuser: bool = False) -> Client:
    if superuser:
        user = User.objects.create_superuser(username, password="pw")
    else:
        user = User.objects.create_user(username, password="pw", is_staff=True)
        user.groups.set(Group.objects.filter(name__in=groups))
    client = Client()
    client.force_login(user)
    return client


def page_of(execution: Execution) -> str:
    return f"/admin/executions/execution/{execution.pk}/change/"


def act(execution: Execution, action: str) -> str:
    return f"/admin/executions/execution/{execution.pk}/do/{action}/"


def nodes_in_svg(html: str) -> dict[str, str]:
    svg = html[html.index('<svg class="wf-dag"') : html.index("</svg>", html.index("wf-dag"))]
    return dict(re.findall(r'data-node-id="([^"]+)" data-status="([^"]+)"', svg))


def test_the_page_draws_one_element_per_node_with_its_status() -> None:
    execution = start(APPROVAL)
    response = client_for("viewer", "viewer").get(page_of(execution))
    assert response.status_code == 200
    html = response.content.decode()
    assert nodes_in_svg(html) == {
        "review": "waiting",
        "hold": "pending",
        "after": "pending",
        "side": "pending",
    }
    assert html.count('class="wf-edge"') == 3
    assert 'id="wf-timeline"' in html
    assert "workflow_started" in html
    # A viewer sees no buttons (nor the live fragment's).
    assert 'data-action="' not in html


def test_a_transactional_step_is_marked_as_such() -> None:
    steps = {
        "nodes": [
            {"id": "reserve", "type": "function", "function": "ledger.insert"},
            {"id": "notify", "type": "function", "function": "ledger.insert_plain"},
        ]
    }
    html = client_for("viewer", "viewer").get(page_of(start(steps))).content.decode()
    rows = dict(re.findall(r'<tr data-node-id="([^"]+)"(.*?)</tr>', html, flags=re.S))
    assert "data-transactional" in rows["reserve"]
    assert "data-transactional" not in rows["notify"]


def test_actions_need_their_permission_page_and_post_alike() -> None:
    execution = start(APPROVAL)
    viewer = client_for("viewer", "viewer")
    for action in ("cancel", "retry", "replay", "approve", "reject"):
        assert viewer.get(act(execution, action)).status_code == 403, action
        assert viewer.post(act(execution, action), {"node": "review"}).status_code == 403, action
    # approve_task is not operate_execution, nor the other way round.
    approver = client_for("ann", "viewer", "approver")
    assert approver.post(act(execution, "cancel")).status_code == 403
    operator = client_for("otto", "viewer", "operator")
    assert operator.post(act(execution, "approve"), {"node": "review"}).status_code == 403
    execution.refresh_from_db()
    assert execution.status == "running"
    assert not Event.objects.filter(execution=execution, type="signal_received").exists()
    # Without the view permission nothing of the execution shows.
    assert client_for("nobody").get(page_of(execution)).status_code == 403


def test_approve_with_a_comment_records_who_did_it() -> None:
    execution = start(APPROVAL)
    approver = client_for("ann", "viewer", "approver")
    page = approver.get(page_of(execution)).content.decode()
    assert 'data-action="approve"' in page
    confirm = approver.get(act(execution, "approve") + "?node=review")
    assert confirm.status_code == 200
    assert "Yes, approve" in confirm.content.decode()
    done = approver.post(
        act(execution, "approve"), {"node": "review", "comment": "looks good"}, follow=True
    )
    assert "review: approve recorded" in done.content.decode()
    signal = Event.objects.get(execution=execution, type="signal_received")
    assert signal.data["by"] == "ann"
    assert signal.data["comment"] == "looks good"
    assert Task.objects.get(execution=execution, node_id="review").status == "succeeded"


def test_cancel_then_retry_one_node_then_replay_from_a_node() -> None:
    execution = start(APPROVAL)
    operator = client_for("otto", "viewer", "operator")
    assert "Yes, cancel" in operator.get(act(execution, "cancel")).content.decode()
    done = operator.post(act(execution, "cancel"), follow=True)
    assert "Cancel requested" in done.content.decode()
    execution.refresh_from_db()
    assert execution.status == "cancelled"
    cancel = Event.objects.get(execution=execution, type="workflow_cancel_requested")
    assert cancel.data["by"] == "otto"
    # Pressed again: the service refuses, and the page says why (no 500, no 409 page).
    again = operator.post(act(execution, "cancel"), follow=True)
    assert "Cancel refused: execution is already cancelled" in again.content.decode()

    retried = operator.post(act(execution, "retry"), {"node": "review"}, follow=True)
    assert "Retry requested: node review" in retried.content.decode()
    retry = Event.objects.get(execution=execution, type="retry_requested")
    assert retry.data["by"] == "otto"
    assert retry.data["node_id"] == "review"

    response = operator.post(act(execution, "replay"), {"node": "side"})
    replay = Execution.objects.get(replay_of=execution)
    assert response.status_code == 302
    assert response["Location"] == page_of(replay)
    assert replay.created_by == "otto"


def test_a_bad_node_is_a_form_error_not_a_500() -> None:
    execution = start(APPROVAL)
    operator = client_for("root", superuser=True)
    response = operator.post(act(execution, "replay"), {"node": "nope"})
    assert response.status_code == 200
    assert "Select a valid choice" in response.content.decode()
    assert operator.get(act(execution, "explode")).status_code == 404


def test_the_log_is_paged_newest_first_by_seq() -> None:
    execution = start(APPROVAL)
    # Rejected, retried, rejected...: a log longer than a page.
    operator = client_for("root", superuser=True)
    while Execution.objects.get(pk=execution.pk).last_seq <= EVENTS_PER_PAGE + 5:
        operator.post(act(execution, "reject"), {"node": "review"})
        operator.post(act(execution, "retry"), {})
    execution.refresh_from_db()
    html = operator.get(page_of(execution)).content.decode()
    seqs = [int(s) for s in re.findall(r'<tr class="wf-ev-[a-z_]+" data-seq="(\d+)"', html)]
    assert seqs == list(range(execution.last_seq, execution.last_seq - EVENTS_PER_PAGE, -1))
    older = re.search(r'href="\?before=(\d+)#wf-log" id="wf-older"', html)
    assert older is not None
    html = operator.get(page_of(execution) + f"?before={older.group(1)}").content.decode()
    seqs = [int(s) for s in re.findall(r'<tr class="wf-ev-[a-z_]+" data-seq="(\d+)"', html)]
    assert seqs == list(range(int(older.group(1)) - 1, 0, -1))[:EVENTS_PER_PAGE]


def test_the_live_fragment_has_the_picture_and_the_timeline() -> None:
    execution = start(APPROVAL)
    html = client_for("viewer", "viewer").get(page_of(execution).replace("change", "live"))
    body = html.content.decode()
    assert body.lstrip().startswith('<div id="wf-live"')
    assert 'data-terminal="false"' in body
    assert nodes_in_svg(body)["review"] == "waiting"


LIST = "/admin/executions/execution/"
FAILING = {"nodes": [{"id": "sign", "type": "approval"}]}


def test_the_list_searches_ids_exactly_and_filters_failed_nodes() -> None:
    rejected, waiting = start(FAILING), start(FAILING)
    root = client_for("root", superuser=True)
    root.post(act(rejected, "reject"), {"node": "sign"})
    html = root.get(LIST, {"q": str(waiting.pk)}).content.decode()
    assert str(waiting.pk) in html
    assert str(rejected.pk) not in html
    # A piece of an id is not an id (no icontains on UUIDs).
    assert str(waiting.pk) not in root.get(LIST, {"q": str(waiting.pk)[:8]}).content.decode()
    html = root.get(LIST, {"failed_nodes": "yes"}).content.decode()
    assert str(rejected.pk) in html
    assert str(waiting.pk) not in html
    html = root.get(LIST, {"failed_nodes": "no"}).content.decode()
    assert str(waiting.pk) in html
    assert str(rejected.pk) not in html


def test_bulk_actions_confirm_then_apply_and_need_operate() -> None:
    rejected, waiting = start(FAILING), start(FAILING)
    root = client_for("root", superuser=True)
    root.post(act(rejected, "reject"), {"node": "sign"})
    picked = {"action": "retry_selected", "_selected_action": [rejected.pk, waiting.pk]}
    confirm = root.post(LIST, picked)
    assert confirm.status_code == 200
    assert "Retry 2 executions?" in confirm.content.decode()
    done = root.post(LIST, {**picked, "confirm": "yes"}, follow=True)
    text = done.content.decode()
    assert "Retry: 1 accepted, 1 skipped" in text
    assert "only a failed or cancelled execution can be retried" in text
    assert Event.objects.get(execution=rejected, type="retry_requested").data["by"] == "root"
    # A viewer is not offered the actions, and posting one anyway does nothing.
    viewer = client_for("viewer", "viewer")
    assert "retry_selected" not in viewer.get(LIST).content.decode()
    viewer.post(LIST, {**picked, "action": "cancel_selected", "confirm": "yes"})
    waiting.refresh_from_db()
    assert waiting.status == "running"


def test_the_event_list_finds_an_executions_events_by_its_exact_id() -> None:
    first, second = start(FAILING), start(FAILING)
    root = client_for("root", superuser=True)
    events = "/admin/executions/event/"
    html = root.get(events, {"q": str(first.pk)}).content.decode()
    assert str(first.pk) in html
    assert str(second.pk) not in html
    assert str(first.pk) not in root.get(events, {"q": str(first.pk)[:8]}).content.decode()
    html = root.get(
        events, {"execution__id__exact": str(first.pk), "source": "api"}
    ).content.decode()
    assert re.findall(r'class="field-type">([a-z_]+)<', html) == ["workflow_started"]


def test_pause_then_resume_and_why_each_node_waits() -> None:
    execution = start(APPROVAL)
    operator = client_for("otto", "viewer", "operator")
    html = operator.get(page_of(execution)).content.decode()
    # Next to each node that is not running: why (the same reasons as GET .../why).
    assert re.search(r'data-node-id="review".*?data-code="waiting_for_approval"', html, re.S)
    assert re.search(r'data-node-id="hold".*?data-code="waiting_for_parents"', html, re.S)
    assert 'data-action="pause"' in html
    done = operator.post(act(execution, "pause"), follow=True)
    assert "Paused" in done.content.decode()
    execution.refresh_from_db()
    assert execution.status == "paused"
    html = done.content.decode()
    assert 'data-action="resume"' in html
    assert 'data-code="execution_paused"' in html
    assert Event.objects.get(execution=execution, type="workflow_paused").data["by"] == "otto"
    # Pause again: refused with the service's reason, not a 500.
    again = operator.post(act(execution, "pause"), follow=True).content.decode()
    assert "Pause refused: only a running execution can be paused" in again
    assert client_for("viewer", "viewer").post(act(execution, "resume")).status_code == 403
    operator.post(act(execution, "resume"))
    execution.refresh_from_db()
    assert execution.status == "running"
    assert Event.objects.get(execution=execution, type="workflow_resumed").data["by"] == "otto"


@pytest.mark.parametrize("object_id", ["not-a-uuid", "00000000-0000-0000-0000-000000000000"])
def test_a_malformed_or_unknown_id_is_a_404(object_id: str) -> None:
    root = client_for("root", superuser=True)
    base = f"/admin/executions/execution/{object_id}"
    for url in (f"{base}/change/", f"{base}/live/", f"{base}/do/cancel/"):
        assert root.get(url).status_code == 404, url
    assert root.post(f"{base}/do/cancel/").status_code == 404


def test_send_a_named_signal() -> None:
    execution = start({"nodes": [{"id": "hook", "type": "signal", "signal": "go"}]})
    operator = client_for("otto", "viewer", "operator")
    assert 'data-action="signal"' in operator.get(page_of(execution)).content.decode()
    assert client_for("viewer", "viewer").post(act(execution, "signal")).status_code == 403
    bad = operator.post(act(execution, "signal"), {"name": "go", "payload": "{not json"})
    assert "Enter a valid JSON" in bad.content.decode()
    done = operator.post(
        act(execution, "signal"), {"name": "go", "payload": '{"n": 1}'}, follow=True
    )
    assert "Signal go sent." in done.content.decode()
    execution.refresh_from_db()
    assert execution.status == "succeeded"
    signal = Event.objects.get(execution=execution, type="signal_received", node_id=None)
    assert signal.data["by"] == "otto"
    assert signal.data["data"] == {"n": 1}


def test_replay_on_another_version_after_comparing_it_first() -> None:
    execution = start(APPROVAL)
    operator = client_for("otto", "viewer", "operator")
    operator.post(act(execution, "cancel"))
    extra = {"id": "extra", "type": "delay", "seconds": 1, "depends_on": ["review"]}
    longer = {**APPROVAL, "nodes": [*APPROVAL["nodes"], extra]}
    WorkflowVersion.objects.create(workflow=execution.workflow, version=2, definition=longer)
    form = operator.get(act(execution, "replay")).content.decode()
    assert '<option value="2">version 2</option>' in form

    before = Execution.objects.count()
    compared = operator.post(
        act(execution, "replay"), {"version": "2", "dry_run": "on"}, follow=True
    )
    said = compared.content.decode()
    assert "What-if against version 2 (nothing started)" in said, said
    assert "Would run:" in said, said
    assert "extra" in said.split("Would run:")[1], said
    assert Execution.objects.count() == before  # a comparison starts nothing

    response = operator.post(act(execution, "replay"), {"version": "2"})
    replay = Execution.objects.get(replay_of=execution)
    assert response["Location"] == page_of(replay)
    assert replay.version.version == 2
    assert replay.created_by == "otto"


@pytest.mark.tampered  # parked rows written straight, no log behind them
def test_the_parked_choices_are_bounded_and_keep_the_task_asked_about(monkeypatch) -> None:
    """A map may park every one of its items: the retry/fail parked page offers the first
    PARKED_CHOICES (the definition's nodes, then by index), and the item its ?node= names."""
    execution = start({"nodes": [{"id": "a", "type": "function", "function": "std.echo"}]})
    Task.objects.filter(execution=execution, node_id="a").update(status="parked")
    for index in range(12):
        Task.objects.create(
            execution=execution, node_id=f"m[{index}]", type="function", status="parked"
        )
    monkeypatch.setattr(actions, "PARKED_CHOICES", 3)
    assert actions.parked_tasks(execution) == ["a", "m[0]", "m[1]"]
    assert actions.parked_tasks(execution, "m[10]") == ["a", "m[0]", "m[1]", "m[10]"]
    assert actions.parked_tasks(execution, "nope") == ["a", "m[0]", "m[1]"]
