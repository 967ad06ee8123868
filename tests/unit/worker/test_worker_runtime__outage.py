"""A worker lives through a short database outage: its lease keeper keeps renewing and a
finished attempt keeps trying to record its result, instead of losing healthy work to the
sweeper. The database calls are replaced by fakes that fail the way psycopg does."""

from __future__ import annotations

import threading
from unittest import mock

import pytest
from django.db import OperationalError

from executions.worker import lease as leases
from executions.worker import runtime
from executions.worker.lease import Lease, LeaseKeeper
from executions.worker.runtime import record
from nodes.context import Claimed
from workflows.dsl.parser import parse_definition

DOWN = OperationalError("connection failed: the database system is shutting down")


@pytest.fixture
def claimed():
    node = parse_definition({"nodes": [{"id": "n", "type": "function", "function": "x"}]}).nodes[0]
    return Claimed(
        attempt_id=7, execution_id="e", node=node, attempt=1, input={}, lease_seconds=0.6
    )


def test_a_renewal_that_meets_an_outage_keeps_the_attempt(claimed) -> None:
    with mock.patch.object(leases, "attempt_renew", side_effect=[DOWN, True]) as renew:
        lease = Lease(claimed, "w")
        assert lease.renew() is True  # unknown yet: carry on
        assert lease.renew() is True
    assert renew.call_count == 2
    assert not lease.lost.is_set()


def test_the_keeper_thread_renews_again_after_an_outage(claimed) -> None:
    renewed_after_outage = threading.Event()
    calls = []

    def renew(**kwargs):
        calls.append(kwargs)
        if len(calls) <= 2:
            raise DOWN
        renewed_after_outage.set()
        return True

    with mock.patch.object(leases, "attempt_renew", side_effect=renew):
        keeper = LeaseKeeper()
        keeper.start()
        lease = keeper.register(Lease(claimed, "w"))
        try:
            assert renewed_after_outage.wait(timeout=10), "the keeper gave up renewing"
        finally:
            keeper.unregister(lease)
            keeper.stop()
            keeper.join(timeout=5)
    assert not lease.lost.is_set()


def test_a_refused_renewal_still_means_stop(claimed) -> None:
    with mock.patch.object(leases, "attempt_renew", return_value=False):
        lease = Lease(claimed, "w")
        assert lease.renew() is False
    assert lease.lost.is_set()


def test_recording_a_result_retries_through_an_outage() -> None:
    finish = mock.Mock(side_effect=[DOWN, DOWN, True])
    with mock.patch.object(runtime.time, "sleep"):
        assert record(finish, attempt_id=7, worker_id="w", output=1) is True
    assert finish.call_count == 3
    finish.assert_called_with(attempt_id=7, worker_id="w", output=1)


def test_recording_gives_up_after_a_long_outage() -> None:
    finish = mock.Mock(side_effect=DOWN)
    clock = iter(range(0, 10_000, 30))
    with (
        mock.patch.object(runtime.time, "sleep"),
        mock.patch.object(runtime.time, "monotonic", side_effect=lambda: next(clock)),
        pytest.raises(OperationalError),
    ):
        record(finish, attempt_id=7, worker_id="w", output=1)
    # The clock reads 0 (deadline 60), then 30 after the first failure (retry), then 60
    # after the second: past the deadline, so exactly two tries, never a third.
    assert runtime.RECORD_RETRY_SECONDS == 60
    assert finish.call_count == 2
