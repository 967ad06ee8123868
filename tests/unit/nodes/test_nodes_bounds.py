"""Bounds on what one attempt may hold: std.sleep's seconds, an HTTP node's total time
and the response it keeps, a server's Retry-After, and the attempt's hard limit."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from email.utils import formatdate
from unittest import mock

import pytest

from executions.services.attempts import DEADLINE_PASSED
from executions.worker import watchdog
from nodes import std
from nodes.context import Claimed, NodeContext
from nodes.errors import NodeError
from nodes.executors import http
from nodes.executors.http import _retry_after_seconds, run_http
from tests.raw_server import raw_http_server, response
from tests.waiting import scaled
from workflows.dsl.limits import overridden
from workflows.dsl.parser import parse_definition


@pytest.fixture
def ctx() -> NodeContext:
    return NodeContext("exec-1", "n", 1)


@pytest.mark.parametrize(
    ("seconds", "fragment"),
    [
        (3601, "WORKFLOW_MAX_SLEEP_SECONDS"),
        (math.inf, "must be a number >= 0"),
        (math.nan, "must be a number >= 0"),
        (-1, "must be a number >= 0"),
    ],
)
def test_std_sleep_refuses_seconds_past_its_bound(
    ctx: NodeContext, seconds: float, fragment: str
) -> None:
    with mock.patch.object(ctx, "sleep") as slept, pytest.raises(NodeError) as info:
        std.sleep({"seconds": seconds}, ctx)
    assert (info.value.type, info.value.retryable) == ("InvalidInput", False)
    assert fragment in info.value.message
    slept.assert_not_called()  # refused before any of it was slept


def drip_reply(line: str) -> list[tuple[bytes, float]]:
    """`/body`: the headers at once, then the body a byte every 0.2 s; `/headers`: the
    status line and headers themselves a byte every 0.2 s."""
    head, body = response("200 OK", b"x" * 1000, Content_Type="text/plain").split(b"\r\n\r\n")
    if " /body " in line:
        return [(head + b"\r\n\r\n", 0), (body, 0.2)]
    return [(head + b"\r\n\r\n" + body, 0.2)]


@pytest.fixture
def drip() -> Iterator[str]:
    with raw_http_server(drip_reply) as server:
        yield server.url


@pytest.mark.parametrize("path", ["/body", "/headers"])
def test_a_dripping_server_is_cut_at_the_total_deadline(
    drip: str, ctx: NodeContext, path: str
) -> None:
    begun = time.monotonic()
    with pytest.raises(NodeError) as info:
        run_http(
            {"url": drip + path},
            ctx,
            success_status=None,
            allowed_hosts=["127.0.0.1"],
            timeout=1.0,
        )
    took = time.monotonic() - begun
    assert (info.value.type, info.value.retryable) == ("HTTPConnectionError", True)
    assert info.value.details["timeout"] is True
    # Cut at the deadline, not when the drip ends (200 s): a bound in time, so a slower
    # machine gets more room past it.
    assert took < 1.0 + scaled(0.5), f"the request held the worker {took:.2f}s past a 1 s deadline"


def test_the_default_deadline_follows_the_setting(drip: str, ctx: NodeContext) -> None:
    begun = time.monotonic()
    with overridden(http_default_timeout_seconds=0.5), pytest.raises(NodeError) as info:
        run_http(
            {"url": drip + "/body"},
            ctx,
            success_status=None,
            allowed_hosts=["127.0.0.1"],
            timeout=None,
        )
    took = time.monotonic() - begun
    assert info.value.details["timeout"] is True
    assert took < 0.5 + scaled(0.5), f"the request held the worker {took:.2f}s, 0.5 s the setting"


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("inf", 86400.0),
        ("Infinity", 86400.0),
        ("1e999", 86400.0),
        ("nan", None),
        ("-5", 0.0),
        ("-inf", 0.0),
        ("99999999999", 86400.0),
        ("7", 7.0),
        ("Fri, 31 Dec 9999 23:59:59 GMT", 86400.0),
        ("Thu, 01 Jan 1970 00:00:00 GMT", 0.0),
        ("garbage", None),
        ("", None),
    ],
)
def test_retry_after_is_clamped_into_a_finite_range(header: str, expected: float | None) -> None:
    assert _retry_after_seconds(header) == expected


def test_retry_after_in_ten_seconds() -> None:
    now = 1_767_225_600.0  # a whole second: an HTTP date has no fraction of one
    with mock.patch.object(http.time, "time", return_value=now):
        assert _retry_after_seconds(formatdate(now + 10, usegmt=True)) == 10.0


def claimed_for(timeout: float | None = None) -> Claimed:
    fields = {"timeout_seconds": timeout} if timeout else {}
    definition = {"nodes": [{"id": "n", "type": "function", "function": "x", **fields}]}
    node = parse_definition(definition).nodes[0]
    return Claimed(attempt_id=7, execution_id="e", node=node, attempt=1, input={}, lease_seconds=30)


@pytest.mark.parametrize(
    ("hard", "timeout", "expected"),
    [(3600.0, None, 3630.0), (3600.0, 10.0, 12.0), (5.0, 100.0, 7.0), (100.0, 50.0, 55.0)],
)
def test_the_hard_limit_is_the_smaller_bound_plus_a_grace(
    hard: float, timeout: float | None, expected: float
) -> None:
    with overridden(attempt_hard_limit_seconds=hard):
        assert watchdog.hard_limit_seconds(claimed_for(timeout)) == expected


def expired(dog: watchdog.Watchdog) -> None:
    """Until the watchdog has fired and its expiry ended: the record written and the exit
    decided, both, when this returns."""
    assert dog.expired.wait(timeout=scaled(5)), "the watchdog never finished firing"
    assert dog.fired.is_set()


def test_past_the_hard_limit_the_failure_is_recorded_and_the_process_replaced() -> None:
    exits: list[bool] = []
    with (
        overridden(attempt_hard_limit_seconds=0.05),
        mock.patch.object(watchdog, "attempt_fail", return_value=True) as fail,
        mock.patch.object(watchdog, "replace_process_on_expiry", True),
        mock.patch.object(watchdog, "connection"),
    ):
        dog = watchdog.Watchdog(claimed_for(), "w1", exit=lambda: exits.append(True)).arm()
        expired(dog)
    assert exits == [True]
    error = fail.call_args.kwargs["error"]
    assert fail.call_args.kwargs["attempt_id"] == 7
    assert fail.call_args.kwargs["worker_id"] == "w1"
    assert error["type"] == "HardTimeLimit"
    assert error["retryable"] is False
    assert "WORKFLOW_ATTEMPT_HARD_LIMIT_SECONDS" in error["message"]


def test_past_its_own_timeout_the_watchdog_records_the_sweepers_timeout() -> None:
    """The node's timeout_seconds binds: the same retryable timeout the sweeper records,
    not a HardTimeLimit failure, whichever of the two sees the deadline first."""
    with (
        overridden(attempt_hard_limit_seconds=3600.0),
        mock.patch.object(watchdog, "hard_limit_seconds", return_value=0.05),
        mock.patch.object(watchdog, "attempt_time_out", return_value=True) as time_out,
        mock.patch.object(watchdog, "attempt_fail", return_value=True) as fail,
        mock.patch.object(watchdog, "connection"),
    ):
        dog = watchdog.Watchdog(claimed_for(timeout=1.0), "w1", exit=lambda: None).arm()
        expired(dog)  # `fired` is set before the record is written: the thread's end after
    fail.assert_not_called()
    time_out.assert_called_once_with(attempt_id=7, reason=DEADLINE_PASSED)


def test_outside_a_pool_child_the_watchdog_records_but_never_exits() -> None:
    exits: list[bool] = []
    with (
        overridden(attempt_hard_limit_seconds=0.05),
        mock.patch.object(watchdog, "attempt_fail", return_value=True),
        mock.patch.object(watchdog, "connection"),
    ):
        dog = watchdog.Watchdog(claimed_for(), "w1", exit=lambda: exits.append(True)).arm()
        expired(dog)
    assert exits == []


def test_a_disarmed_watchdog_never_fires() -> None:
    with (
        overridden(attempt_hard_limit_seconds=0.05),
        mock.patch.object(watchdog, "attempt_fail", return_value=True) as fail,
        mock.patch.object(watchdog, "connection"),
    ):
        dog = watchdog.Watchdog(claimed_for(), "w1", exit=lambda: None).arm()
        dog.disarm()
        # The process's one clock fires deadlines in order: once one armed after it has
        # fired, the disarmed one's deadline has passed without firing.
        later = watchdog.Watchdog(claimed_for(), "w2", exit=lambda: None).arm()
        expired(later)
    assert not dog.fired.is_set()
    assert not dog.expired.is_set()
    assert [call.kwargs["worker_id"] for call in fail.call_args_list] == ["w2"]


def test_one_clock_thread_serves_every_watchdog_of_a_process() -> None:
    """Arming and disarming start no thread (the clock's is started once), and disarmed
    deadlines do not pile up in the clock."""
    with overridden(attempt_hard_limit_seconds=3600.0):
        watchdog.Watchdog(claimed_for(), "w0", exit=lambda: None).arm().disarm()
        threads = threading.active_count()
        before = watchdog._clock().armed()
        for _ in range(3 * watchdog._Clock.COMPACT_AT):
            watchdog.Watchdog(claimed_for(), "w1", exit=lambda: None).arm().disarm()
        assert threading.active_count() == threads
        assert watchdog._clock().armed() == before
        assert len(watchdog._clock()._heap) < 2 * watchdog._Clock.COMPACT_AT + before
