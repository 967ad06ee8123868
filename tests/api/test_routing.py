"""An attempt's run_task message, as it reaches the real broker: named
`wf:<workflow>/<node>#<attempt>` (Celery's shadow name, what Flower shows), and sent to its
node type's own queue when WORKFLOW_NODE_QUEUES names one (docs/how-to/scale-workers.md),
by the start and by the sweeper's republish alike."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone
from kombu.simple import SimpleQueue

from config.celery import app
from executions import messages
from executions.models import Attempt
from executions.services.sweep import sweep
from tests.factories import start

pytestmark = pytest.mark.django_db

HTTP_AND_FUNCTION = {
    "nodes": [
        {"id": "call", "type": "http", "request": {"method": "GET", "url": "https://example.com"}},
        {"id": "echo", "type": "function", "function": "std.echo"},
    ]
}


@pytest.fixture
def queues(settings) -> Iterator[dict[str, SimpleQueue]]:
    """Queues of this test's own for HTTP and function nodes, deleted after."""
    names = {kind: f"test-{kind}-{uuid.uuid4().hex[:8]}" for kind in ("http", "function")}
    settings.WORKFLOW_NODE_QUEUES = names
    with app.connection_for_write() as connection:
        opened = {kind: connection.SimpleQueue(name) for kind, name in names.items()}
        try:
            yield opened
        finally:
            for queue in opened.values():
                queue.queue.delete()
                queue.close()


def received(queue: SimpleQueue) -> dict[str, str]:
    message = queue.get(timeout=10)
    message.ack()
    return message.headers


def empty(queue: SimpleQueue) -> bool:
    try:
        queue.get_nowait()
    except queue.Empty:
        return True
    return False


def test_attempts_are_named_and_routed_by_node_type(
    queues: dict[str, SimpleQueue], django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        execution = start(HTTP_AND_FUNCTION)
    workflow = execution.workflow.name
    for node_id, kind in (("call", "http"), ("echo", "function")):
        headers = received(queues[kind])
        attempt = Attempt.objects.get(execution=execution, node_id=node_id)
        assert headers["task"] == "nodes.tasks.run_task"
        assert headers["shadow"] == f"wf:{workflow}/{node_id}#1"
        assert headers["argsrepr"] == f"({attempt.pk},)"
        assert empty(queues[kind])  # one message each, each in its own queue

    # A lost message is republished by the sweeper: same name, same queue.
    call = Attempt.objects.get(execution=execution, node_id="call")
    Attempt.objects.filter(pk=call.pk).update(published_at=timezone.now() - timedelta(hours=1))
    with django_capture_on_commit_callbacks(execute=True):
        sweep()
    assert received(queues["http"])["shadow"] == f"wf:{workflow}/call#1"
    assert empty(queues["function"])


def test_a_fan_out_publishes_its_attempts_over_one_producer(
    queues: dict[str, SimpleQueue], django_capture_on_commit_callbacks
) -> None:
    """Six attempts scheduled by one commit: one broker connection taken from the pool,
    six messages, each named, routed and at its execution's priority as if sent alone."""
    wide = {
        "nodes": [{"id": f"n{i}", "type": "function", "function": "std.echo"} for i in range(6)]
    }
    pool = app.amqp.producer_pool
    with (
        mock.patch.object(pool, "acquire", wraps=pool.acquire) as acquired,
        django_capture_on_commit_callbacks(execute=True),
    ):
        execution = start(wide, priority=7)
    assert acquired.call_count == 1
    workflow = execution.workflow.name
    got = {}
    for _ in range(6):
        message = queues["function"].get(timeout=10)
        message.ack()
        got[message.headers["shadow"]] = message.properties.get("priority")
    assert got == {f"wf:{workflow}/n{i}#1": messages.broker_priority(7) for i in range(6)}
    assert empty(queues["function"])
