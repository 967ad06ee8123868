"""A cancel interrupts an HTTP call in flight: while the server keeps the request waiting,
the executor heartbeats, and the heartbeat that learns of the cancel closes the
connection (the server sees it closed) and stops the attempt with NodeCancelled."""

from __future__ import annotations

import threading
import time

import pytest

from nodes.context import NodeContext
from nodes.errors import NodeCancelled, NodeError
from nodes.executors.http import run_http
from nodes.executors.transport import INTERRUPT_EVERY_SECONDS
from tests.raw_server import hanging_http_server

LOCAL = ("127.0.0.1",)


def test_a_cancel_closes_the_connection_of_a_call_in_flight() -> None:
    cancelled = threading.Event()
    beats: list[float] = []

    def heartbeat() -> bool:
        beats.append(time.monotonic())
        return not cancelled.is_set()  # False: the worker's renewal was refused

    ctx = NodeContext("exec-1", "call", 1, _heartbeat=heartbeat)
    outcome: list[BaseException] = []

    def call(url: str) -> None:
        try:
            run_http({"url": url}, ctx, success_status=None, allowed_hosts=LOCAL, timeout=60)
        except BaseException as exc:
            outcome.append(exc)

    with hanging_http_server() as server:
        caller = threading.Thread(target=call, args=(f"{server.url}/slow",), daemon=True)
        caller.start()
        assert server.arrived.wait(10), "the request never reached the server"
        cancelled.set()
        cancelled_at = time.monotonic()
        assert server.closed.wait(10), "the client never closed the connection"
        caller.join(10)
    assert [name for name, _ in server.log] == ["request", "closed"]
    assert len(outcome) == 1, outcome
    assert isinstance(outcome[0], NodeCancelled), outcome
    # The connection closed within one heartbeat interval (plus scheduling) of the cancel.
    assert server.at("closed") - cancelled_at < 1.0
    assert INTERRUPT_EVERY_SECONDS <= 0.5
    assert beats, "it never heartbeat while waiting"


def test_an_uncancelled_slow_call_keeps_heartbeating_until_its_deadline() -> None:
    beats: list[float] = []

    def heartbeat() -> bool:
        beats.append(time.monotonic())
        return True

    ctx = NodeContext("exec-1", "call", 1, _heartbeat=heartbeat)
    with hanging_http_server() as server, pytest.raises(NodeError) as caught:
        run_http(
            {"url": f"{server.url}/slow"},
            ctx,
            success_status=None,
            allowed_hosts=LOCAL,
            timeout=1.2,
        )
    assert caught.value.type == "HTTPConnectionError"
    assert caught.value.details["timeout"] is True
    assert len(beats) >= 1
