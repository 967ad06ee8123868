"""Replay and retry repeated with one Idempotency-Key on real workers: the repeat answers
as the first did and starts nothing (one replay execution, one round of retries)."""

from __future__ import annotations

import uuid

from django.core.management import call_command

from executions.models import Execution
from tests.factories import events, start
from tests.integration.engine import operator_client as api

FAILS = {
    "nodes": [
        {"id": "ok", "type": "function", "function": "std.echo", "input": {"n": 1}},
        {
            "id": "broken",
            "type": "function",
            "function": "std.fail",
            "depends_on": ["ok"],
            "input": {"message": "boom", "retryable": False},
        },
    ]
}


def test_a_double_retry_and_a_double_replay_start_one_each(live) -> None:
    client = api()
    failed = live.wait(start(FAILS).pk)
    assert failed.status == "failed"
    key = f"retry-{uuid.uuid4().hex[:8]}"
    url = f"/executions/{failed.pk}/retry"
    first = client.post(url, {}, format="json", headers={"Idempotency-Key": key})
    again = client.post(url, {}, format="json", headers={"Idempotency-Key": key})
    assert first.status_code == again.status_code == 202, first.content
    # The same execution: as POST /executions, a repeat shows it as it is now.
    assert again.json()["id"] == first.json()["id"] == str(failed.pk)
    retried = live.wait(failed.pk)
    assert retried.status == "failed"
    assert len(events(retried, "retry_requested")) == 1
    assert len(events(retried, "task_scheduled", "broken")) == 2  # the first run, one retry
    # Asked again after the retry ended: still the first answer, still nothing new.
    late = client.post(url, {}, format="json", headers={"Idempotency-Key": key})
    assert (late.status_code, late.json()["id"]) == (202, str(failed.pk))
    assert len(events(Execution.objects.get(pk=failed.pk), "retry_requested")) == 1

    key = f"replay-{uuid.uuid4().hex[:8]}"
    url = f"/executions/{failed.pk}/replay"
    first = client.post(url, {}, format="json", headers={"Idempotency-Key": key})
    again = client.post(url, {}, format="json", headers={"Idempotency-Key": key})
    assert first.status_code == again.status_code == 201, first.content
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["replay_of"] == str(failed.pk)
    replay = live.wait(first.json()["id"])
    assert replay.status == "failed"
    assert Execution.objects.filter(replay_of=failed).count() == 1
    call_command("verify_logs", str(failed.pk), str(replay.pk))
