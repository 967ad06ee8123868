"""Secrets reach the node but never the log; start_at holds an execution until its time."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from django.utils import timezone

from executions.models import Event
from tests.factories import events, start


class Recorder(BaseHTTPRequestHandler):
    headers_seen: list[dict[str, str]] = []

    def do_GET(self) -> None:  # noqa: N802
        type(self).headers_seen.append(dict(self.headers))
        body = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def test_secret_is_sent_but_never_written_to_an_event(live) -> None:
    Recorder.headers_seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/me"
        execution = start(
            {
                "nodes": [
                    {
                        "id": "call",
                        "type": "http",
                        "request": {
                            "method": "GET",
                            "url": url,
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
    finally:
        server.shutdown()
    assert done.status == "succeeded"
    (seen,) = Recorder.headers_seen
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
    at = timezone.now() + timedelta(seconds=2)
    execution = start(
        {"nodes": [{"id": "a", "type": "function", "function": "std.noop"}]}, start_at=at
    )
    execution.refresh_from_db()
    assert execution.status == "pending" and execution.last_seq == 0
    time.sleep(0.5)
    execution.refresh_from_db()
    assert execution.status == "pending"
    done = live.wait(execution.pk, timeout=30)
    assert done.status == "succeeded"
    (started,) = events(done, "workflow_started")
    assert started.timestamp >= at
