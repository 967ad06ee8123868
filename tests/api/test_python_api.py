"""workflows.api on the test database, without workers: what each call writes and
raises, transactional start, by= recorded, the async twins, execution_finished."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connections, transaction
from django.dispatch import receiver

from executions.models import Attempt, Event, Execution
from executions.signals import execution_finished
from executions.triggers.services import trigger_create
from tests.factories import events, make_version
from workflows import api
from workflows.models import WorkflowVersion

pytestmark = pytest.mark.django_db

ECHO = {"nodes": [{"id": "a", "type": "function", "function": "std.echo", "input": "{{ input }}"}]}
APPROVAL = {"nodes": [{"id": "ok", "type": "approval"}]}
SIGNAL = {"nodes": [{"id": "s", "type": "signal", "signal": "go"}]}


def written() -> tuple[int, int, int]:
    return Execution.objects.count(), Event.objects.count(), Attempt.objects.count()


def test_start_returns_the_execution_as_the_api_shows_it_and_records_by(user) -> None:
    version = make_version(ECHO)
    run = api.start(version.workflow.name, {"x": 1}, by=user)
    assert isinstance(run.id, uuid.UUID)
    assert run.status == "running"
    assert run.data["workflow"] == version.workflow.name
    assert run.data["input"] == {"x": 1}
    assert run.output is None
    assert run.error is None
    (started,) = events(Execution.objects.get(pk=run.id), "workflow_started")
    assert started.data["by"] == user.username
    # By id too, and a username as by.
    again = api.start(version.workflow_id, by="someone")
    assert Execution.objects.get(pk=again.id).created_by == "someone"


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda name: api.start("no-such-workflow"), api.UnknownWorkflow, "no-such-workflow"),
        (lambda name: api.start(name, version=7), api.InvalidInput, "no version 7"),
        (lambda name: api.start(name, {"when": object()}), api.InvalidInput, "input"),
        (lambda name: api.start(name, float("nan")), api.InvalidInput, "input"),
        (lambda name: api.start(name, priority=10), api.InvalidInput, "priority"),
        (lambda name: api.start(name, priority=True), api.InvalidInput, "priority"),
        (lambda name: api.start(name, idempotency_key=""), api.InvalidInput, "idempotency_key"),
    ],
)
def test_a_start_that_cannot_start_raises_and_writes_nothing(call, error, words) -> None:
    name = make_version(ECHO).workflow.name
    before = written()
    with pytest.raises(error, match=words) as raised:
        call(name)
    assert isinstance(raised.value, api.WorkflowError)
    assert written() == before


def test_a_stored_definition_that_no_longer_parses_raises_start_failed() -> None:
    version = make_version(ECHO)
    # What a removed function leaves behind: a stored version the parser now refuses.
    WorkflowVersion.objects.filter(pk=version.pk).update(
        definition={"nodes": [{"id": "a", "type": "gone"}]}
    )
    before = written()
    with pytest.raises(api.StartFailed, match="gone"):
        api.start(version.workflow.name)
    assert written() == before


def test_an_idempotency_key_returns_the_first_execution_and_refuses_another_body() -> None:
    name = make_version(ECHO).workflow.name
    first = api.start(name, {"n": 1}, idempotency_key="order-42")
    assert api.start(name, {"n": 1}, idempotency_key="order-42").id == first.id
    with pytest.raises(api.IdempotencyConflict, match="order-42"):
        api.start(name, {"n": 2}, idempotency_key="order-42")
    assert Execution.objects.count() == 1


def test_a_start_inside_a_rolled_back_block_leaves_nothing(
    django_capture_on_commit_callbacks,
) -> None:
    name = make_version(ECHO).workflow.name
    before = written()
    ids = []

    def block() -> None:
        with transaction.atomic():
            ids.append(api.start(name, {"x": 1}).id)
            assert Execution.objects.filter(pk=ids[0]).exists()
            raise RuntimeError("the caller's block fails")

    with django_capture_on_commit_callbacks() as sent, pytest.raises(RuntimeError):
        block()
    assert ids
    assert written() == before
    assert sent == []  # no message waits for a commit that never came


def test_a_start_inside_a_committed_block_sends_its_messages_on_commit(
    django_capture_on_commit_callbacks,
) -> None:
    name = make_version(ECHO).workflow.name
    with django_capture_on_commit_callbacks() as sent, transaction.atomic():
        run = api.start(name)
        assert sent == []  # nothing leaves before the commit
    assert sent, "the attempt's run_task message goes out on commit"
    assert Attempt.objects.filter(execution_id=run.id).count() == 1


def test_get_and_its_errors() -> None:
    run = api.start(make_version(ECHO).workflow.name)
    assert api.get(run.id).data == run.data
    assert api.get(str(run.id)).id == run.id
    with pytest.raises(api.UnknownExecution):
        api.get(uuid.uuid4())
    with pytest.raises(api.UnknownExecution, match="not an execution id"):
        api.get("nope")


def test_approve_and_reject_end_the_execution_and_record_by(user) -> None:
    name = make_version(APPROVAL).workflow.name
    approved = api.start(name)
    assert approved.approve("ok", {"note": "fine"}, by=user).status == "succeeded"
    assert approved.result(timeout=0)["ok"]["approved"] is True
    (signal,) = events(Execution.objects.get(pk=approved.id), "signal_received")
    assert signal.data["by"] == user.username
    assert signal.data["data"] == {"note": "fine"}
    with pytest.raises(api.NotAllowed, match="not waiting for approval"):
        approved.approve("ok")
    with pytest.raises(api.UnknownNode):
        approved.reject("missing")

    rejected = api.start(name)
    assert rejected.reject("ok").status == "failed"
    with pytest.raises(api.ExecutionFailed) as failed:
        rejected.result(timeout=0)
    assert failed.value.execution.id == rejected.id


def test_signal_delivers_data_as_the_node_s_output() -> None:
    run = api.start(make_version(SIGNAL).workflow.name)
    with pytest.raises(api.UnknownNode, match="nope"):
        run.signal("nope")
    assert run.signal("go", {"answer": 42}).status == "succeeded"
    assert run.result(timeout=0) == {"s": {"answer": 42}}
    with pytest.raises(api.NotAllowed, match="already succeeded"):
        run.signal("go")


def test_cancel_pause_resume_events_and_why(user) -> None:
    run = api.start(make_version(APPROVAL).workflow.name)
    assert [reason["code"] for reason in run.why()[0]["reasons"]] == ["waiting_for_approval"]
    assert run.pause(by=user).status == "paused"
    with pytest.raises(api.NotAllowed):
        run.pause()
    assert run.resume().status == "running"
    assert run.cancel(by=user).status == "cancelled"
    kinds = [event["type"] for event in run.events()]
    assert kinds[0] == "workflow_started"
    assert kinds[-1] == "workflow_cancelled"
    assert [event["seq"] for event in run.events(after_seq=2)] == list(range(3, len(kinds) + 1))
    with pytest.raises(api.UnknownNode):
        run.retry(node_id="missing")
    with pytest.raises(api.NotAllowed, match="only a failed or cancelled"):
        api.start(make_version(APPROVAL).workflow.name).retry()


def test_wait_inside_a_transaction_refuses_instead_of_hanging() -> None:
    run = api.start(make_version(APPROVAL).workflow.name)
    # The test runs inside a transaction, as a view under ATOMIC_REQUESTS would.
    with pytest.raises(api.WorkflowError, match=r"inside transaction\.atomic"):
        run.wait(timeout=1)


def test_execution_finished_is_sent_once_after_the_commit_that_ends_it(
    django_capture_on_commit_callbacks,
) -> None:
    seen: list[tuple[Any, str]] = []

    @receiver(execution_finished, weak=False)
    def record(sender: Any, execution: api.Execution, status: str, **kwargs: Any) -> None:
        seen.append((execution, status))

    @receiver(execution_finished, weak=False)
    def broken(sender: Any, **kwargs: Any) -> None:
        raise RuntimeError("a receiver's bug")

    try:
        run = api.start(make_version(APPROVAL).workflow.name)
        with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
            run.approve("ok")
            assert seen == []  # not before the commit
        assert [(handle.id, status) for handle, status in seen] == [(run.id, "succeeded")]
        assert isinstance(seen[0][0], api.Execution)
        assert seen[0][0].status == "succeeded"
    finally:
        execution_finished.disconnect(record)
        execution_finished.disconnect(broken)


@pytest.mark.timeout(60)
def test_a_call_inside_a_transaction_whose_hooks_run_inside_one_ends(
    django_capture_on_commit_callbacks,
) -> None:
    """A call that takes a lock inside the caller's transaction leaves the end of its
    block's look (kernel/lock.py looking_after) to the commit. Where the hooks run inside a
    transaction themselves (a host project's TestCase, captureOnCommitCallbacks with
    execute=True), that look runs once: it does not put itself off again for ever."""
    run = api.start(make_version(APPROVAL).workflow.name)
    with django_capture_on_commit_callbacks(execute=True) as hooks, transaction.atomic():
        run.cancel()
        assert Execution.objects.get(pk=run.id).status == "cancelled"
    assert 0 < len(hooks) < 10
    assert api.get(run.id).status == "cancelled"


@pytest.mark.django_db(transaction=True)
def test_the_async_twins() -> None:
    name = make_version(APPROVAL).workflow.name

    async def scenario() -> tuple[str, str, Any]:
        run = await api.astart(name, {"a": 1})
        same = await api.aget(run.id)
        await run.aapprove("ok")
        output = await run.aresult(timeout=5)
        # The twins ran in asgiref's thread, on a connection of its own.
        await sync_to_async(connections.close_all)()
        return same.status, run.status, output["ok"]["approved"]

    assert asyncio.run(scenario()) == ("running", "succeeded", True)


def test_publish_event_starts_the_matching_triggers(user) -> None:
    version = make_version(ECHO)
    trigger_create(name="on-order", event="order.placed", workflow=version.workflow)
    started = api.publish_event("order.placed", {"id": 7}, idempotency_key="evt-1", by=user)
    assert [run.data["input"] for run in started] == [{"id": 7}]
    assert api.publish_event("order.placed", {"id": 7}, idempotency_key="evt-1")[0].id == (
        started[0].id
    )
    assert api.publish_event("nobody.listens") == []
    with pytest.raises(api.InvalidInput):
        api.publish_event("")
