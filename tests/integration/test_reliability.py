"""Issue "Reliability", one mechanism at a time: once an execution is started it reaches a
terminal status whatever happens to workers and messages, and its history stays exact.

Real worker and beat processes (the `live` fixture) wherever the mechanism is about them;
./dev test runs this file on PostgreSQL + Redis and again on SQLite + the filesystem broker.
Every count asserted is exact.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from executions.definitions import definition_for
from executions.engine.events import RESULT_TYPES, Source
from executions.engine.verify import verify
from executions.kernel.advance import execution_advance
from executions.kernel.log import events_of, state_at, to_engine
from executions.kernel.projections import differences
from executions.models import Attempt, AttemptStatus, Event, Execution, Task, Timer
from executions.services.attempts import (
    attempt_claim,
    attempt_complete,
    attempt_fail,
    attempt_renew,
    attempt_time_out,
)
from executions.services.sweep import sweep
from executions.tasks import sweep as sweep_task
from executions.worker.runtime import run_task
from tests.factories import events, start, timeline
from tests.waiting import eventually

GHOST = "ghost-host:999999:1"


def one_node(node: dict, **policy) -> dict:
    definition: dict[str, Any] = {"nodes": [{"id": "n", "type": "function", **node}]}
    if policy:
        definition["retry_policy"] = policy
    return definition


def assert_exact_history(execution: Execution) -> None:
    """Contiguous seqs, one result per attempt, every decision re-derivable, projections
    equal to the folded log."""
    rows = list(events_of(execution.pk))
    assert [r.seq for r in rows] == list(range(1, len(rows) + 1)), "gap or duplicate seq"
    results = Counter((r.node_id, r.attempt) for r in rows if r.type in RESULT_TYPES)
    assert all(n == 1 for n in results.values()), f"two results for one attempt: {results}"
    scheduled = Counter((r.node_id, r.attempt) for r in rows if r.type == "task_scheduled")
    assert all(n == 1 for n in scheduled.values()), f"an attempt scheduled twice: {scheduled}"
    divergence = verify(
        definition_for(execution.version_id),
        [to_engine(r) for r in rows],
        execution_id=str(execution.pk),
    )
    assert divergence is None, str(divergence)
    execution.refresh_from_db()
    assert differences(execution, state_at(execution.pk)) == []


@contextmanager
def unpublished(*, timers: bool = False) -> Iterator[None]:
    """Messages decided in this block never reach the broker: lost after the commit."""
    with mock.patch("executions.messages.publish_attempt") as attempts:
        if timers:
            with mock.patch("executions.messages.publish_timer"):
                yield
        else:
            yield
    assert attempts.called, "nothing was scheduled: the test would prove nothing"


def ghost_claim(execution: Execution, node_id: str = "n", *, expired: bool = True) -> Attempt:
    """Claim attempt 1 as a worker that then vanishes; optionally let its lease lapse."""
    attempt = Attempt.objects.get(execution=execution, node_id=node_id, attempt=1)
    assert attempt_claim(attempt_id=attempt.pk, worker_id=GHOST) is not None
    if expired:
        past = timezone.now() - timedelta(seconds=1)
        Attempt.objects.filter(pk=attempt.pk).update(lease_expires_at=past)
    attempt.refresh_from_db()
    return attempt


def count(execution: Execution, type: str, **filters) -> int:
    return Event.objects.filter(execution=execution, type=type, **filters).count()


# --- 1. duplicate delivery ----------------------------------------------------------


def test_duplicate_run_task_messages_run_the_attempt_once(live) -> None:
    execution = start(one_node({"function": "std.sleep", "input": {"seconds": 1}}))
    attempt = Attempt.objects.get(execution=execution, node_id="n")
    # The engine published one message on commit; three more copies of it arrive at once.
    duplicates = [str(uuid.uuid4()) for _ in range(3)]
    for task_id in duplicates:
        run_task.apply_async(args=(attempt.pk,), task_id=task_id)
    done = live.wait(execution.pk)
    live.ran(duplicates)
    assert done.status == "succeeded", (done.error, timeline(done))
    assert [kind for _, kind, _, _ in timeline(done)] == [
        "workflow_started",
        "task_scheduled",
        "task_started",
        "task_completed",
        "workflow_completed",
    ]
    # A copy delivered after the end changes nothing either.
    late = str(uuid.uuid4())
    run_task.apply_async(args=(attempt.pk,), task_id=late)
    live.ran([late])
    assert Event.objects.filter(execution=done).count() == 5
    attempt.refresh_from_db()
    assert attempt.status == AttemptStatus.SUCCEEDED
    assert Task.objects.get(execution=done, node_id="n").attempts == 1
    assert_exact_history(done)


# --- 2. a worker killed mid-node ----------------------------------------------------


def test_worker_killed_mid_node_is_timed_out_and_retried_on_a_survivor(live) -> None:
    live.start_worker()
    execution = start(
        one_node(
            {
                "function": "std.sleep",
                "input": {"seconds": 2},
                "heartbeat_timeout_seconds": 2,
            },
            max_attempts=3,
            initial_interval_seconds=0.5,
        )
    )
    first = eventually(
        lambda: Attempt.objects.filter(
            execution=execution, attempt=1, status=AttemptStatus.RUNNING
        ).first(),
        30,
        "attempt 1 was never claimed",
    )
    pid = int(first.worker_id.split(":")[1])
    (victim,) = [w for w in live.workers if os.getpgid(pid) == w.pid]
    live.kill_worker(victim)
    survivors = {w.pid for w in live.workers}

    done = live.wait(execution.pk, timeout=90)
    assert done.status == "succeeded", (done.error, timeline(done))
    task = Task.objects.get(execution=done, node_id="n")
    assert task.attempts == 2
    assert task.retry_count == 1
    (timed_out,) = events(done, "task_timed_out")
    assert timed_out.attempt == 1
    assert timed_out.source == Source.SWEEPER
    assert timed_out.data["error"]["type"] == "Timeout"
    assert "lease expired" in timed_out.data["error"]["message"]
    assert [e.attempt for e in events(done, "task_started")] == [1, 2]
    assert [e.attempt for e in events(done, "task_completed")] == [2]
    second = Attempt.objects.get(execution=done, attempt=2)
    assert os.getpgid(int(second.worker_id.split(":")[1])) in survivors
    assert_exact_history(done)


# --- 3. a lost message --------------------------------------------------------------


def test_lost_run_task_message_is_republished_by_the_sweeper(live) -> None:
    with unpublished():
        execution = start(one_node({"function": "std.echo", "input": {"x": 1}}))
    attempt = Attempt.objects.get(execution=execution, node_id="n")
    assert attempt.status == AttemptStatus.SCHEDULED
    done = live.wait(execution.pk)
    assert done.status == "succeeded", (done.error, timeline(done))
    assert done.output == {"n": {"x": 1}}
    attempt.refresh_from_db()
    # Republished (the stamp moved) no sooner than WORKFLOW_REPUBLISH_AFTER_SECONDS (2).
    assert attempt.published_at is not None
    assert (attempt.published_at - attempt.scheduled_at).total_seconds() >= 2
    (scheduled,) = events(done, "task_scheduled")
    (started,) = events(done, "task_started")
    assert (started.timestamp - scheduled.timestamp).total_seconds() >= 2
    assert count(done, "task_completed") == 1
    assert_exact_history(done)


# --- 4. a late result ---------------------------------------------------------------


def test_late_result_of_a_timed_out_attempt_is_refused(live) -> None:
    with unpublished():
        execution = start(
            one_node(
                {"function": "std.sleep", "input": {"seconds": 1.5}},
                max_attempts=2,
                initial_interval_seconds=0.2,
            )
        )
    stale = ghost_claim(execution)
    retry = eventually(
        lambda: Attempt.objects.filter(
            execution=execution, attempt=2, status=AttemptStatus.RUNNING
        ).first(),
        30,
        "the retry never ran",
    )
    # The vanished worker comes back and reports, while the retry that replaced it runs.
    assert attempt_complete(attempt_id=stale.pk, worker_id=GHOST, output={"late": 1}) is False
    assert attempt_fail(attempt_id=stale.pk, worker_id=GHOST, error={"type": "X"}) is False
    # A worker that does not hold the running attempt cannot finish it either.
    assert attempt_complete(attempt_id=retry.pk, worker_id=GHOST, output={"x": 1}) is False
    done = live.wait(execution.pk)
    assert done.status == "succeeded", (done.error, timeline(done))
    assert done.output == {"n": {"seconds": 1.5}}
    results = [
        (e.type, e.attempt) for e in Event.objects.filter(execution=done, type__in=RESULT_TYPES)
    ]
    assert results == [("task_timed_out", 1), ("task_completed", 2)]
    # Once it is over, the late result is still refused and appends nothing.
    before = Event.objects.filter(execution=done).count()
    assert attempt_complete(attempt_id=stale.pk, worker_id=GHOST, output={"late": 2}) is False
    assert attempt_complete(attempt_id=retry.pk, worker_id=retry.worker_id, output={}) is False
    assert Event.objects.filter(execution=done).count() == before
    stale.refresh_from_db()
    assert stale.status == AttemptStatus.TIMED_OUT
    assert_exact_history(done)


@pytest.mark.django_db
@pytest.mark.tampered  # it forges result events on purpose
def test_database_refuses_a_second_result_for_one_attempt() -> None:
    execution = start(one_node({"function": "std.echo"}))
    now = timezone.now()

    def result(seq: int, type: str) -> Event:
        return Event(
            execution=execution,
            seq=seq,
            type=type,
            node_id="n",
            attempt=1,
            data={},
            timestamp=now,
            source=Source.WORKER,
        )

    Event.objects.bulk_create([result(execution.last_seq + 1, "task_completed")])
    for other in sorted(RESULT_TYPES):
        with pytest.raises(IntegrityError), transaction.atomic():
            Event.objects.bulk_create([result(execution.last_seq + 2, other)])
    # The seq constraint is the other backstop: no two events share a seq.
    with pytest.raises(IntegrityError), transaction.atomic():
        Event.objects.bulk_create([result(execution.last_seq + 1, "task_started")])


# --- 5. two sweepers at once --------------------------------------------------------


def test_two_sweepers_at_once_time_out_and_fire_each_thing_once(live) -> None:
    leased = one_node({"function": "std.echo"}, max_attempts=2, initial_interval_seconds=3)
    delayed = {
        "nodes": [
            {"id": "wait", "type": "delay", "seconds": 0.1},
            {"id": "n", "type": "function", "function": "std.noop", "depends_on": ["wait"]},
        ]
    }
    live.stop_beat()  # only the two sweepers below may sweep
    live.sweeps_settled()  # and none the beat queued before it stopped is still to run
    try:
        with unpublished(timers=True):
            expired = [start(leased) for _ in range(6)]
            for execution in expired:
                ghost_claim(execution)
            waiting = [start(delayed) for _ in range(6)]
        due = timezone.now() - timedelta(seconds=1)
        Timer.objects.filter(execution__in=waiting).update(due_at=due)

        barrier = threading.Barrier(2)
        reports, errors = [], []

        def sweeper() -> None:
            try:
                barrier.wait(timeout=10)
                reports.append(sweep())
            except Exception as exc:  # surfaced below
                errors.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=sweeper) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not errors, errors
        assert len(reports) == 2
    finally:
        live.start_beat()
    assert sum(r.timed_out for r in reports) == 6
    assert sum(r.timers_fired for r in reports) == 6
    for execution in expired:
        assert count(execution, "task_timed_out") == 1
    for execution in waiting:
        assert count(execution, "timer_fired") == 1
    for execution in expired:
        done = live.wait(execution.pk)
        assert done.status == "succeeded", (done.error, timeline(done))
        assert Task.objects.get(execution=done, node_id="n").attempts == 2
        assert count(done, "task_timed_out") == 1
        assert count(done, "task_retry_scheduled") == 1
        assert_exact_history(done)
    for execution in waiting:
        done = live.wait(execution.pk)
        assert done.status == "succeeded", (done.error, timeline(done))
        assert count(done, "timer_fired") == 1
        assert_exact_history(done)


# --- 6. an expired lease ------------------------------------------------------------


def test_expired_lease_is_timed_out_and_retried(live) -> None:
    with unpublished():
        execution = start(
            one_node({"function": "std.echo", "input": {"x": 2}}, initial_interval_seconds=0.2)
        )
    ghost_claim(execution)
    done = live.wait(execution.pk)
    assert done.status == "succeeded", (done.error, timeline(done))
    assert done.output == {"n": {"x": 2}}
    task = Task.objects.get(execution=done, node_id="n")
    assert task.attempts == 2
    assert task.retry_count == 1
    assert [(kind, attempt) for _, kind, _, attempt in timeline(done)][2:] == [
        ("task_started", 1),
        ("task_timed_out", 1),
        ("task_retry_scheduled", 1),
        ("timer_fired", 2),
        ("task_scheduled", 2),
        ("task_started", 2),
        ("task_completed", 2),
        ("workflow_completed", None),
    ]
    assert_exact_history(done)


def test_expired_lease_with_one_attempt_fails_the_execution_with_a_timeout(live) -> None:
    with unpublished():
        execution = start(one_node({"function": "std.echo"}, max_attempts=1))
    ghost_claim(execution)
    done = live.wait(execution.pk)
    assert done.status == "failed"
    assert done.error["cause"]["type"] == "Timeout"
    assert "lease expired" in done.error["cause"]["message"]
    assert count(done, "task_timed_out") == 1
    assert count(done, "task_retry_scheduled") == 0
    assert Task.objects.get(execution=done, node_id="n").status == "failed"
    assert_exact_history(done)


@pytest.mark.django_db
def test_a_renewal_that_beat_the_sweeper_keeps_the_attempt() -> None:
    """The sweeper listed the attempt as expired, then its worker renewed the lease before
    the sweeper got to it: the attempt is alive and must not be timed out."""
    execution = start(one_node({"function": "std.echo"}))
    attempt = Attempt.objects.get(execution=execution, node_id="n")
    assert attempt_claim(attempt_id=attempt.pk, worker_id=GHOST) is not None
    assert attempt_renew(attempt_id=attempt.pk, worker_id=GHOST, lease_seconds=30)
    assert attempt_time_out(attempt_id=attempt.pk, reason="lease expired (stale view)") is False
    assert count(execution, "task_timed_out") == 0
    attempt.refresh_from_db()
    assert attempt.status == AttemptStatus.RUNNING
    # Once the lease really has lapsed, the same verdict goes through, once.
    past = timezone.now() - timedelta(seconds=1)
    Attempt.objects.filter(pk=attempt.pk).update(lease_expires_at=past)
    assert attempt_time_out(attempt_id=attempt.pk, reason="lease expired") is True
    assert attempt_time_out(attempt_id=attempt.pk, reason="lease expired") is False
    assert count(execution, "task_timed_out") == 1


# --- 7. many orchestrators at once --------------------------------------------------


def test_many_concurrent_advances_of_one_execution_keep_the_log_exact(live) -> None:
    fan = [
        {"id": f"p{i}", "type": "function", "function": "std.sleep", "input": {"seconds": 0.2}}
        for i in range(12)
    ]
    join = {
        "id": "join",
        "type": "function",
        "function": "std.echo",
        "depends_on": [n["id"] for n in fan],
    }
    execution = start({"nodes": [*fan, join]})
    task_ids = [str(uuid.uuid4()) for _ in range(50)]
    errors = []

    def orchestrator() -> None:
        try:
            for _ in range(10):
                execution_advance(execution_id=execution.pk)
        except Exception as exc:  # surfaced below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=orchestrator) for _ in range(6)]
    for thread in threads:
        thread.start()
    # The real workers' sweepers advance it at the same time (the advance task is gone:
    # nothing ever enqueued it).
    for task_id in task_ids:
        sweep_task.apply_async(task_id=task_id)
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    done = live.wait(execution.pk)
    live.ran(task_ids)
    assert done.status == "succeeded", (done.error, timeline(done))
    kinds = Counter(kind for _, kind, _, _ in timeline(done))
    assert kinds == {
        "workflow_started": 1,
        "task_scheduled": 13,
        "task_started": 13,
        "task_completed": 13,
        "workflow_completed": 1,
    }
    decisions = [
        (e.type, e.node_id, e.attempt)
        for e in Event.objects.filter(execution=done, source=Source.ENGINE)
    ]
    assert len(decisions) == len(set(decisions)) == 14
    assert done.decided_seq == done.last_seq == sum(kinds.values())
    assert_exact_history(done)
