"""A cancel interrupts an HTTP call in flight on a real worker: POST .../cancel records
the cancel, the worker's next heartbeat is refused, and it closes the connection; the
server sees it closed within a second of the cancel's answer."""

from __future__ import annotations

import time

from executions.models import Task
from tests.factories import events, start, timeline
from tests.integration.engine import assert_replayable, wait_for
from tests.integration.test_parking import operator
from tests.raw_server import hanging_http_server


def test_a_cancel_closes_the_connection_of_an_http_call_in_flight(live) -> None:
    with hanging_http_server() as server:
        execution = start(
            {
                "nodes": [
                    {
                        "id": "call",
                        "type": "http",
                        "timeout_seconds": 120,
                        "request": {"method": "POST", "url": f"{server.url}/slow", "json": {}},
                    }
                ]
            }
        )
        assert server.arrived.wait(60), "the request never reached the server"
        wait_for(execution, "call", "running")
        client = operator()
        asked_at = time.monotonic()
        answer = client.post(f"/executions/{execution.pk}/cancel")
        answered_at = time.monotonic()  # the cancel is committed when its answer comes
        assert answer.status_code == 202, answer.content
        assert server.closed.wait(30), "the worker never closed the connection"
        done = live.wait(execution.pk)
    assert [name for name, _ in server.log] == ["request", "closed"]
    interval = server.at("closed") - answered_at
    sent = server.at("closed") - asked_at
    assert interval < 1.0, f"closed {interval:.3f}s after the cancel ({sent:.3f}s after sent)"
    assert done.status == "cancelled", timeline(done)
    assert Task.objects.get(execution=done, node_id="call").status == "cancelled"
    assert [e.type for e in events(done, node_id="call") if e.attempt == 1][-1] == "task_cancelled"
    assert not events(done, "task_completed")
    assert not events(done, "task_failed")
    assert_replayable(done)
