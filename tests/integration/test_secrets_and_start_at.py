"""Secrets reach the node but never the log; start_at holds an execution until its time."""

from __future__ import annotations

import json
from datetime import timedelta

from django.utils import timezone

from executions.models import Event
from tests.factories import events, start
from tests.servers import http_server
from tests.waiting import SLOWDOWN, scaled


def test_secret_is_sent_but_never_written_to_an_event(live) -> None:
    with http_server(lambda request, seen: (200, {})) as server:
        execution = start(
            {
                "nodes": [
                    {
                        "id": "call",
                        "type": "http",
                        "request": {
                            "method": "GET",
                            "url": f"{server.url}/me",
                            "headers": {
                                "Authorization": "Bearer {{ secrets.API_TOKEN }}",
                                "X-User": "{{ input.user }}",
                            },
                        },
                    }
                ]
            },
            {"user": "{{ secrets.API_TOKEN }}"},
        )  # data must never be rendered as a template
        done = live.wait(execution.pk)
    assert done.status == "succeeded"
    (request,) = server.seen
    seen = request.headers
    assert seen["Authorization"] == "Bearer s3cr3t-from-env"
    assert seen["X-User"] == "{{ secrets.API_TOKEN }}"
    log = json.dumps([e.data for e in Event.objects.filter(execution=done)])
    assert "s3cr3t-from-env" not in log
    (scheduled,) = events(done, "task_scheduled", "call")
    assert scheduled.data["input"]["headers"]["Authorization"] == "Bearer {{ secrets.API_TOKEN }}"


def test_missing_secret_fails_the_node_without_retry(live) -> None:
    execution = start(
        {
            "nodes": [
                {
                    "id": "call",
                    "type": "http",
                    "request": {
                        "method": "GET",
                        "url": "http://127.0.0.1:9/",
                        "headers": {"Authorization": "{{ secrets.NOT_CONFIGURED }}"},
                    },
                }
            ]
        }
    )
    done = live.wait(execution.pk)
    assert done.status == "failed"
    assert done.error["cause"]["type"] == "MissingSecret"
    assert "NOT_CONFIGURED" in done.error["cause"]["message"]


def test_start_at_holds_the_execution_until_its_time(live) -> None:
    at = timezone.now() + timedelta(seconds=scaled(3))
    execution = start(
        {"nodes": [{"id": "a", "type": "function", "function": "std.noop"}]}, start_at=at
    )
    execution.refresh_from_db()
    assert execution.status == "pending"
    assert execution.last_seq == 0
    # A whole sweep before its time leaves it pending too (the sweeper fires due timers).
    live.swept()
    execution.refresh_from_db()
    assert execution.status == "pending"
    assert timezone.now() < at, f"the sweep ran past start_at: raise {SLOWDOWN}"
    done = live.wait(execution.pk, timeout=30)
    assert done.status == "succeeded"
    (started,) = events(done, "workflow_started")
    assert started.timestamp >= at
