import math
import threading
from collections.abc import Callable

import pytest

import nodes.context
import nodes.std
from nodes.context import SLEEP_STEP_SECONDS, NodeContext
from nodes.errors import NodeCancelled, NodeError
from nodes.registry import get_function
from tests.waiting import scaled


def call(name, input, ctx=None):
    return get_function(name)(input, ctx or NodeContext("exec-1", "node", 1))


def test_echo_and_noop():
    assert call("std.echo", {"a": [1, 2]}) == {"a": [1, 2]}
    assert call("std.echo", None) is None
    assert call("std.noop", {"a": 1}) is None


class _Clock:
    """A monotonic clock that moves only when the sleeper waits: timings become exact.

    Also the sleeper's cancel event (it waits on it): `cancel_at` seconds after the clock
    started, `on_cancel` runs, as the worker's thread would call ctx.cancel(); without
    `cancel_at` nothing may cancel the attempt."""

    def __init__(self) -> None:
        self.now = self.started = 1000.0
        self.cancel_at: float | None = None
        self.on_cancel: Callable[[], None] = lambda: None
        self.cancelled = False

    def monotonic(self) -> float:
        return self.now

    def elapsed(self) -> float:
        return self.now - self.started

    def wait(self, timeout: float | None = None) -> bool:  # threading.Event.wait
        self.now += timeout or 0.0
        if self.cancel_at is not None and self.elapsed() >= self.cancel_at and not self.cancelled:
            self.on_cancel()
        return self.cancelled

    def is_set(self) -> bool:
        return self.cancelled

    def set(self) -> None:
        if self.cancel_at is None:
            raise AssertionError("nothing cancels this attempt")
        self.cancelled = True


@pytest.fixture
def clock(monkeypatch) -> _Clock:
    clock = _Clock()
    monkeypatch.setattr(nodes.context.time, "monotonic", clock.monotonic)
    return clock


def test_sleep_heartbeats_at_least_every_second_and_returns_input(clock: _Clock) -> None:
    beats: list[float] = []

    def beat() -> bool:
        beats.append(clock.monotonic())
        return True

    ctx = NodeContext("e", "n", 1, _heartbeat=beat, _cancel_event=clock)  # type: ignore[arg-type]
    started = clock.monotonic()
    assert call("std.sleep", {"seconds": 1.25, "x": 1}, ctx) == {"seconds": 1.25, "x": 1}
    elapsed = clock.monotonic() - started
    # Exactly the time asked (not a multiple of the step): the last wait is cut to the
    # deadline (approx: the fake clock adds floats). Early or overshooting by part of a
    # step fails.
    assert elapsed == pytest.approx(1.25, abs=1e-9)
    assert len(beats) >= 2
    gaps = [b - a for a, b in zip([started, *beats], [*beats, clock.monotonic()], strict=True)]
    assert max(gaps) < 1.0


def test_sleep_stops_early_when_cancelled(clock: _Clock) -> None:
    # A 30 s sleep cancelled 0.2 s in: it raises, at the first step after the cancel.
    clock.cancel_at = 0.2
    ctx = NodeContext("e", "n", 1, _cancel_event=clock)  # type: ignore[arg-type]
    clock.on_cancel = ctx.cancel
    with pytest.raises(NodeCancelled):
        call("std.sleep", {"seconds": 30}, ctx)
    assert clock.cancelled
    assert 0.2 <= clock.elapsed() < 0.2 + SLEEP_STEP_SECONDS + 1e-9


def test_a_cancel_from_another_thread_wakes_the_sleep():
    """The real event: the worker's thread cancels while the sleeper waits on it."""
    sleeping = threading.Event()

    def beat() -> bool:
        sleeping.set()  # ctx.sleep's first heartbeat: the sleep has begun
        return True

    ctx = NodeContext("e", "n", 1, _heartbeat=beat)
    outcome: list[BaseException] = []

    def sleeper() -> None:
        try:
            call("std.sleep", {"seconds": 30}, ctx)
        except BaseException as raised:
            outcome.append(raised)

    thread = threading.Thread(target=sleeper)
    thread.start()
    assert sleeping.wait(timeout=scaled(10)), "the sleep never began"
    ctx.cancel()
    thread.join(timeout=scaled(10))  # a 30 s sleep cut short
    assert not thread.is_alive(), "the cancelled sleep went on"
    (raised,) = outcome
    assert isinstance(raised, NodeCancelled), raised


def test_sleep_stops_when_is_cancelled_turns_true(clock: _Clock) -> None:
    clock.cancel_at = math.inf  # only is_cancelled turning true may cancel (it sets the event)
    ctx = NodeContext(
        "e",
        "n",
        1,
        _is_cancelled=lambda: clock.elapsed() > 0.2,
        _cancel_event=clock,  # type: ignore[arg-type]
    )
    with pytest.raises(NodeCancelled):
        call("std.sleep", {"seconds": 30}, ctx)
    assert clock.cancelled
    assert 0.2 < clock.elapsed() < 0.2 + SLEEP_STEP_SECONDS + 1e-9


def test_sleep_stops_when_the_lease_is_lost():
    ctx = NodeContext("e", "n", 1, _heartbeat=lambda: False)
    with pytest.raises(NodeCancelled):
        call("std.sleep", {"seconds": 30}, ctx)


@pytest.mark.parametrize("input", [None, {}, {"seconds": "1"}, {"seconds": -1}, {"seconds": True}])
def test_sleep_rejects_bad_input(input):
    with pytest.raises(NodeError) as info:
        call("std.sleep", input)
    assert info.value.type == "InvalidInput"
    assert not info.value.retryable


def test_fail_defaults():
    with pytest.raises(NodeError) as info:
        call("std.fail", {"message": "nope"})
    assert (info.value.type, info.value.message, info.value.retryable) == (
        "std.fail",
        "nope",
        True,
    )


def test_fail_non_retryable_with_type():
    with pytest.raises(NodeError) as info:
        call("std.fail", {"message": "bad card", "retryable": False, "type": "CardDeclined"})
    assert info.value.as_dict() == {
        "type": "CardDeclined",
        "message": "bad card",
        "retryable": False,
    }


def test_demo_signup_chain_is_deterministic_per_idempotency_key():
    def ctx(node: str, attempt: int = 1) -> NodeContext:
        return NodeContext("exec-42", node, attempt)

    fast = {"sleep_seconds": 0}
    verified = call(
        "demo.verify_account", {"user_id": "u1", "email": "u1@example.com", **fast}, ctx("v")
    )
    assert verified == {"user_id": "u1", "email": "u1@example.com", "verified": True}

    workspace = call("demo.create_workspace", {"user_id": "u1", **fast}, ctx("w"))
    assert workspace["owner"] == "u1"
    assert workspace["workspace_id"].startswith("ws_")
    retried = call("demo.create_workspace", {"user_id": "u1", **fast}, ctx("w", attempt=2))
    assert retried == workspace

    email = call("demo.send_email", {"to": "u1@example.com", **fast}, ctx("e"))
    assert email["sent"] is True
    assert email["to"] == "u1@example.com"

    team = call(
        "demo.create_team",
        {"workspace_id": workspace["workspace_id"], "user_id": "u1", **fast},
        ctx("t"),
    )
    assert team["workspace_id"] == workspace["workspace_id"]
    assert team["members"] == ["u1"]

    done = call("demo.done", {"team": team, **fast}, ctx("d"))
    assert done == {"status": "onboarded", "execution_id": "exec-42", "summary": {"team": team}}


def test_demo_function_takes_time_and_heartbeats(clock: _Clock) -> None:
    beats: list[int] = []

    def heartbeat() -> bool:
        beats.append(1)
        return True

    ctx = NodeContext("e", "n", 1, _heartbeat=heartbeat, _cancel_event=clock)  # type: ignore[arg-type]
    call("demo.verify_account", {"user_id": "u"}, ctx)
    assert clock.elapsed() == pytest.approx(0.5, abs=1e-9)  # its default, on the fake clock
    assert beats
