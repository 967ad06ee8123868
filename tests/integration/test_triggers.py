"""An event starts its triggers' workflows on real workers, each linked to the event."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

from django.contrib.auth import get_user_model
from django.db import connection
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from executions.models import Execution
from executions.triggers.models import PublishedEvent, TriggerRun
from executions.triggers.services import event_publish, executions_of, trigger_create
from tests.factories import make_version
from tests.integration.test_concurrency import most_at_once, run_span

ECHO = {"nodes": [{"id": "a", "type": "function", "function": "std.echo", "input": "{{ input }}"}]}


def test_an_event_runs_its_triggers_workflows_to_the_end(live) -> None:
    workflow = make_version(ECHO).workflow
    trigger_create(
        name=f"t-{workflow.name}"[:100],
        event=f"order.paid.{workflow.name}",
        workflow=workflow,
        input={"order": "{{ event.data.id }}"},
        filter="event.data.total > `10`",
    )
    small = event_publish(key=f"order.paid.{workflow.name}", data={"id": 1, "total": 5})
    big = event_publish(key=f"order.paid.{workflow.name}", data={"id": 2, "total": 50})
    assert executions_of(small) == []
    (started,) = executions_of(big)
    done = live.wait(started)
    assert done.status == "succeeded"
    assert done.output == {"a": {"order": 2}}
    assert TriggerRun.objects.get(event=big).execution_id == done.pk


def test_events_whose_triggers_lock_keys_in_opposite_orders_never_deadlock(live) -> None:
    """Two triggers on one event start a limited workflow under the keys the event's data
    names, `x` then `y`: concurrent POST /events with {x: a, y: b} and {x: b, y: a} would
    lock the two keys in opposite orders in their transactions, were the starts admitted
    inline. Every event is 202 and runs, never more than the limit of a key at once."""
    workflow = make_version(
        {**ECHO, "concurrency": {"key": "{{ input.k }}", "limit": 1}},
        name=f"keyed-{uuid.uuid4().hex[:8]}",
    ).workflow
    key = f"paired.{workflow.name}"
    for name, field in (("first", "x"), ("second", "y")):
        trigger_create(
            name=f"{name}-{workflow.name}"[:100],
            event=key,
            workflow=workflow,
            input={"k": "{{ event.data." + field + " }}"},
        )
    name = f"events-{uuid.uuid4().hex[:8]}"
    admin = get_user_model().objects.create_superuser(name, f"{name}@example.com", "pw-" + name)
    token = Token.objects.create(user=admin).key

    def post(data: dict[str, str]) -> int:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        try:
            return client.post("/events", {"key": key, "data": data}, format="json").status_code
        finally:
            connection.close()

    orders = [{"x": "a", "y": "b"}, {"x": "b", "y": "a"}] * 12
    with ThreadPoolExecutor(max_workers=4) as pool:
        codes = list(pool.map(post, orders))
    assert codes == [202] * len(orders)
    events = PublishedEvent.objects.filter(key=key)
    started = [e for event in events for e in executions_of(event)]
    assert len(started) == 2 * len(orders)
    done = [live.wait(pk, timeout=120) for pk in started]
    assert {e.status for e in done} == {"succeeded"}
    for value in ("a", "b"):
        keyed = Execution.objects.filter(pk__in=started, concurrency_key=value)
        spans = [span for e in keyed if (span := run_span(e)) is not None]
        assert len(spans) == len(orders)
        assert most_at_once(spans) == 1
