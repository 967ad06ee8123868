"""One lease keeper per worker process renews every attempt the process runs: each at its
own interval, a refusal or a stall ending only that attempt's lease, and none renewed
after it is unregistered. The database calls are replaced by fakes (the integration
tests test_heartbeats and test_reliability run the real thing)."""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Iterator
from unittest import mock

import pytest

from executions.worker import lease as leases
from executions.worker.lease import Lease, LeaseKeeper, lease_keeper
from nodes.context import Claimed
from tests.waiting import eventually, scaled
from workflows.dsl.parser import parse_definition

NODE = parse_definition({"nodes": [{"id": "n", "type": "function", "function": "x"}]}).nodes[0]


def claimed(attempt_id: int, lease_seconds: float = 0.6) -> Claimed:
    return Claimed(
        attempt_id=attempt_id,
        execution_id="e",
        node=NODE,
        attempt=1,
        input={},
        lease_seconds=lease_seconds,
    )


@pytest.fixture
def keeper() -> Iterator[LeaseKeeper]:
    keeper = LeaseKeeper()
    keeper.start()
    yield keeper
    keeper.stop()
    keeper.join(timeout=5)
    assert not keeper.is_alive()


class Renewals:
    """A fake attempt_renew: counts renewals per attempt, refuses those in `refused`."""

    def __init__(self, refused: frozenset[int] = frozenset()) -> None:
        self.counts: Counter[int] = Counter()
        self.refused = refused
        self.lock = threading.Lock()

    def __call__(self, *, attempt_id: int, worker_id: str, lease_seconds: float) -> bool:
        with self.lock:
            self.counts[attempt_id] += 1
        return attempt_id not in self.refused

    def count(self, attempt_id: int) -> int:
        with self.lock:
            return self.counts[attempt_id]


def test_one_keeper_renews_every_registered_attempt(keeper) -> None:
    renewals = Renewals()
    with mock.patch.object(leases, "attempt_renew", side_effect=renewals):
        registered = [keeper.register(Lease(claimed(i), "w")) for i in (1, 2, 3)]
        eventually(
            lambda: all(renewals.count(i) >= 2 for i in (1, 2, 3)),
            10,
            lambda: f"not each renewed twice: {renewals.counts}",
        )
        for lease in registered:
            keeper.unregister(lease)
    assert not any(lease.lost.is_set() for lease in registered)
    assert keeper.registered() == 0


def test_each_lease_is_renewed_at_its_own_interval(keeper) -> None:
    renewals = Renewals()
    with mock.patch.object(leases, "attempt_renew", side_effect=renewals):
        fast = keeper.register(Lease(claimed(1, lease_seconds=0.6), "w"))  # every 0.2 s
        slow = keeper.register(Lease(claimed(2, lease_seconds=30), "w"))  # every 10 s
        eventually(lambda: renewals.count(1) >= 5, 10, "the fast lease renewed under 5 times")
        keeper.unregister(fast)
        keeper.unregister(slow)
    assert renewals.count(2) == 0


def test_a_refused_renewal_ends_that_lease_only(keeper) -> None:
    renewals = Renewals(refused=frozenset({2}))
    with mock.patch.object(leases, "attempt_renew", side_effect=renewals):
        kept = keeper.register(Lease(claimed(1), "w"))
        refused = keeper.register(Lease(claimed(2), "w"))
        assert refused.lost.wait(timeout=scaled(10))
        after_refusal = renewals.count(1)
        eventually(
            lambda: renewals.count(1) >= after_refusal + 3, 10, "the kept lease stopped renewing"
        )
        keeper.unregister(kept)
        keeper.unregister(refused)
    assert not kept.lost.is_set()
    assert renewals.count(2) == 1  # the keeper stopped renewing it at its refusal


def test_a_renewal_that_raises_ends_that_lease_only(keeper) -> None:
    def renew(*, attempt_id: int, worker_id: str, lease_seconds: float) -> bool:
        if attempt_id == 2:
            raise RuntimeError("a bug, not an outage")
        return renewals(attempt_id=attempt_id, worker_id=worker_id, lease_seconds=lease_seconds)

    renewals = Renewals()
    with mock.patch.object(leases, "attempt_renew", side_effect=renew):
        kept = keeper.register(Lease(claimed(1), "w"))
        broken = keeper.register(Lease(claimed(2), "w"))
        eventually(lambda: keeper.registered() == 1, 10, "the broken lease is still registered")
        eventually(lambda: renewals.count(1) >= 3, 10, "the kept lease renewed under 3 times")
        keeper.unregister(kept)
        keeper.unregister(broken)
    assert keeper.is_alive()


def test_no_renewal_after_unregister(keeper) -> None:
    renewals = Renewals()
    with mock.patch.object(leases, "attempt_renew", side_effect=renewals):
        lease = keeper.register(Lease(claimed(1), "w"))
        other = keeper.register(Lease(claimed(2), "w"))
        eventually(lambda: renewals.count(1) >= 2, 10, "lease 1 renewed under twice")
        keeper.unregister(lease)
        stopped_at, other_at = renewals.count(1), renewals.count(2)
        # The keeper goes on: three more renewals of the other after it.
        eventually(lambda: renewals.count(2) >= other_at + 3, 10, "the keeper stopped renewing")
        keeper.unregister(other)
    assert renewals.count(1) == stopped_at


def test_unregister_waits_for_a_renewal_under_way(keeper) -> None:
    """The runtime reads `lost` right after unregistering: a refusal under way must land first."""
    entered, release = threading.Event(), threading.Event()

    def renew(**kwargs) -> bool:
        entered.set()
        release.wait(timeout=scaled(10))
        return False

    with mock.patch.object(leases, "attempt_renew", side_effect=renew):
        lease = keeper.register(Lease(claimed(1), "w"))
        assert entered.wait(timeout=scaled(10))
        threading.Timer(0.3, release.set).start()
        keeper.unregister(lease)
        assert lease.lost.is_set()


def test_a_stalled_function_is_timed_out_and_on_stall_called(keeper) -> None:
    # A progress window the test thread's beats (every 0.1 s) must keep inside of: wider
    # on a slower machine, where the thread may be kept waiting longer between them.
    progress = scaled(0.4)
    stalled, on_stall = mock.Mock(return_value=True), mock.Mock()
    renewals = Renewals()
    with (
        mock.patch.object(leases, "attempt_renew", side_effect=renewals),
        mock.patch.object(leases, "attempt_stalled", stalled),
    ):
        lease = keeper.register(
            Lease(claimed(1, lease_seconds=30), "w", progress_seconds=progress, on_stall=on_stall)
        )
        beating = keeper.register(
            Lease(claimed(2, lease_seconds=30), "w", progress_seconds=progress)
        )
        # Attempt 2's function keeps calling ctx.heartbeat() (ten times at least, a second
        # and more than its progress window) until attempt 1's, which never does, is timed out.
        beats: list[bool] = []

        def beating_until_stalled() -> bool:
            beats.append(beating.beat())
            return len(beats) >= 10 and lease.lost.is_set()

        eventually(beating_until_stalled, 10, "attempt 1 was never timed out", interval=0.1)
        assert all(beats), beats
        keeper.unregister(lease)
        keeper.unregister(beating)
    stalled.assert_called_once_with(attempt_id=1, worker_id="w", seconds=progress)
    on_stall.assert_called_once_with()
    assert not beating.lost.is_set()
    assert lease.beat() is False  # ctx.heartbeat() now raises NodeCancelled


def test_the_process_keeper_is_one_thread_and_restarts_in_a_new_process() -> None:
    first = lease_keeper()
    assert lease_keeper() is first
    assert first.is_alive()
    first.pid = os.getpid() + 1  # as a forked child sees its parent's keeper
    second = lease_keeper()
    assert second is not first
    assert second.is_alive()
    assert second.pid == os.getpid()
    assert lease_keeper() is second
    first.stop()
    first.join(timeout=5)


def test_an_attempt_still_running_gets_one_on_running_call_before_its_renewals(keeper) -> None:
    renewals, calls = Renewals(), []
    with mock.patch.object(leases, "attempt_renew", side_effect=renewals):
        quick = keeper.register(
            Lease(claimed(1), "w", running_after=5.0, on_running=lambda: calls.append(1))
        )
        keeper.unregister(quick)  # ended before it was due: no call
        slow = keeper.register(
            Lease(claimed(2), "w", running_after=0.05, on_running=lambda: calls.append(2))
        )
        eventually(lambda: renewals.count(2) >= 2, 10, "the slow attempt renewed under twice")
        keeper.unregister(slow)
    assert calls == [2]
    assert renewals.count(1) == 0
