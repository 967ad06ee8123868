"""Exactly-once database steps: a transactional function's writes commit if and only if its
result is recorded, in the same transaction.

Real worker and beat processes (the `live` fixture); the ledger functions
(tests/ledger/workflow_functions.py) write one row per run, keyed by (execution, node), with
no unique key, so a step whose writes committed twice shows as two rows. Some runs are made
in this process through the worker's own runtime (`run_claimed`), to deliver one attempt
twice or late. ./dev test runs this file on PostgreSQL + Redis and again on SQLite + the
filesystem broker; the kills only on PostgreSQL.
"""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from executions.engine.events import RESULT_TYPES
from executions.models import Attempt, AttemptStatus, Event, Execution
from executions.services.attempts import attempt_claim
from executions.services.control import execution_cancel
from executions.services.why import why_node
from executions.worker.runtime import run_claimed, worker_id
from nodes.context import Claimed
from tests.factories import events, start, timeline
from tests.integration.engine import Engine
from tests.integration.test_faults_example import crashing_first, faulty_server
from tests.integration.test_reliability import assert_exact_history, unpublished
from tests.ledger.models import Entry
from tests.waiting import eventually

QUICK_RETRY = {"initial_interval_seconds": 0.2, "backoff_coefficient": 1.0, "jitter": False}


def step(function: str = "ledger.insert", **input: Any) -> dict[str, Any]:
    return {"id": "n", "type": "function", "function": function, "input": input}


def one_step(node: dict[str, Any], max_attempts: int = 1) -> dict[str, Any]:
    return {"nodes": [node], "retry_policy": {"max_attempts": max_attempts, **QUICK_RETRY}}


def rows(execution: Execution, node_id: str = "n") -> list[int]:
    """The attempts whose writes committed, one per row."""
    found = Entry.objects.filter(execution_id=str(execution.pk), node_id=node_id)
    return sorted(found.values_list("attempt", flat=True))


def results(execution: Execution) -> list[tuple[str, int | None]]:
    found = Event.objects.filter(execution=execution, type__in=RESULT_TYPES).order_by("seq")
    return [(e.type, e.attempt) for e in found]


def claim(execution: Execution, attempt: int = 1) -> tuple[Claimed, str]:
    """Claim the attempt in this process, as a worker would (its message is never sent)."""
    row = Attempt.objects.get(execution=execution, node_id="n", attempt=attempt)
    worker = worker_id()
    claimed = attempt_claim(attempt_id=row.pk, worker_id=worker)
    assert claimed is not None, "the attempt was not there to claim"
    return claimed, worker


def test_a_transactional_step_commits_its_row_with_its_result(live: Engine) -> None:
    execution = start(one_step(step(seconds=0)))
    done = live.wait(execution.pk)
    assert done.status == "succeeded", (done.error, timeline(done))
    assert rows(done) == [1]
    (completed,) = events(done, "task_completed")
    assert completed.data["transactional"] is True
    assert completed.data["output"]["entry"] == Entry.objects.get(execution_id=str(done.pk)).pk
    assert_exact_history(done)


def test_a_step_that_raises_after_writing_leaves_nothing(live: Engine) -> None:
    execution = start(one_step(step(seconds=0, fail=True), max_attempts=2))
    done = live.wait(execution.pk)
    assert done.status == "failed", timeline(done)
    assert rows(done) == []
    failures = events(done, "task_failed")
    assert [e.attempt for e in failures] == [1, 2]
    for failed in failures:
        assert failed.data["transactional"] is True
        assert failed.data["error"]["type"] == "RuntimeError"
        assert failed.data["error"]["message"] == "failed after writing its row"
    assert_exact_history(done)


def test_a_transactional_function_cannot_heartbeat(live: Engine) -> None:
    execution = start(one_step(step("ledger.heartbeat"), max_attempts=3))
    done = live.wait(execution.pk)
    assert done.status == "failed", timeline(done)
    assert rows(done) == []
    (failed,) = events(done, "task_failed")  # not retryable: it would fail every time
    error = failed.data["error"]
    assert (error["type"], error["retryable"]) == ("HeartbeatInTransaction", False)
    assert "cannot be called from a transactional function" in error["message"]


def test_a_second_delivery_of_the_same_attempt_is_refused_and_leaves_no_row(
    live: Engine,
) -> None:
    with unpublished():
        execution = start(one_step(step(seconds=0)))
    claimed, worker = claim(execution)
    assert run_claimed(claimed, worker, claim_next=False) is None
    assert rows(execution) == [1]
    # The same attempt runs again (a second delivery that got past the claim): its
    # function writes its row again, its result is refused, and the row goes with it.
    assert run_claimed(claimed, worker, claim_next=False) is None
    done = live.wait(execution.pk)
    assert done.status == "succeeded", (done.error, timeline(done))
    assert rows(done) == [1]
    assert results(done) == [("task_completed", 1)]
    assert_exact_history(done)


def test_a_late_result_after_its_lease_timed_out_leaves_no_row(live: Engine) -> None:
    with unpublished():
        execution = start(one_step(step(seconds=0), max_attempts=2))
    stale, worker = claim(execution)
    # Its worker stops renewing: the sweeper times attempt 1 out, a live worker runs 2.
    past = timezone.now() - timedelta(seconds=1)
    Attempt.objects.filter(pk=stale.attempt_id).update(lease_expires_at=past)
    done = live.wait(execution.pk)
    assert done.status == "succeeded", (done.error, timeline(done))
    assert rows(done) == [2]
    # The first worker comes back and finishes: its row is written, then refused with
    # its result, so nothing of attempt 1 is left.
    assert run_claimed(stale, worker, claim_next=False) is None
    assert rows(done) == [2]
    assert results(done) == [("task_timed_out", 1), ("task_completed", 2)]
    assert_exact_history(done)


def test_injected_faults_leave_one_row_and_the_log_verifies(
    live: Engine, settings, tmp_path: Path
) -> None:
    """Every message delivered twice, attempt 1 crashing after its effect (its write), every
    result late: one row, the retry's, and `verify_logs` passes on the log."""
    mark = tmp_path / "marks"
    with faulty_server(live, settings) as api:
        name = f"tx-faults-{uuid.uuid4().hex[:8]}"
        definition = one_step(step(seconds=0, mark=str(mark)), max_attempts=3)
        api.post("/workflows", {"name": name, "definition": definition}, format="json")
        faults = {
            "duplicate_delivery": 1.0,
            "crash_after_effect": 0.5,
            "delay_result_seconds": 0.3,
            "seed": crashing_first(0.5, node_id="n"),
        }
        started = api.post("/executions", {"workflow": name, "faults": faults}, format="json")
        assert started.status_code == 201, started.content
        done = live.wait(started.json()["id"], timeout=60)
    assert done.status == "succeeded", (done.error, timeline(done))
    assert mark.read_text().splitlines() == [f"{done.pk} n 1", f"{done.pk} n 2"]
    assert rows(done) == [2]
    assert results(done) == [("task_timed_out", 1), ("task_completed", 2)]
    call_command("verify_logs", str(done.pk))


def test_a_step_of_an_execution_cancelled_while_it_ran_leaves_no_row(live: Engine) -> None:
    with unpublished():
        execution = start(one_step(step(seconds=0)))
    claimed, worker = claim(execution)
    execution_cancel(execution_id=execution.pk, by="test")
    assert run_claimed(claimed, worker, claim_next=False) is None
    done = live.wait(execution.pk)
    assert done.status == "cancelled", timeline(done)
    assert rows(done) == []
    assert results(done) == [("task_cancelled", 1)]


def test_a_transaction_past_its_timeout_fails_and_leaves_no_row(live: Engine) -> None:
    with unpublished():
        execution = start(one_step(step(seconds=1.0), max_attempts=2))
    claimed, worker = claim(execution)
    with override_settings(WORKFLOW_TRANSACTIONAL_TIMEOUT_SECONDS=0.3):
        assert run_claimed(claimed, worker, claim_next=False) is None
    (failed,) = events(execution, "task_failed")
    error = failed.data["error"]
    # PostgreSQL cuts the idle transaction off; SQLite's is refused when it returns.
    expected = "TransactionLost" if connection.vendor == "postgresql" else "TransactionTimeout"
    assert (error["type"], error["retryable"]) == (expected, True)
    assert "WORKFLOW_TRANSACTIONAL_TIMEOUT_SECONDS" in error["message"]
    assert rows(execution) == []
    done = live.wait(execution.pk)  # the retry, on a live worker, within the bound
    assert done.status == "succeeded", (done.error, timeline(done))
    assert rows(done) == [2]
    assert_exact_history(done)


def test_why_names_a_running_transactional_step(live: Engine, tmp_path: Path) -> None:
    mark = tmp_path / "marks"
    execution = start(one_step(step(seconds=3, mark=str(mark))))
    wait_for_mark(mark, execution, 1)

    def running() -> list[dict[str, Any]]:
        now = Execution.objects.get(pk=execution.pk)  # why reads the log up to last_seq
        return [r for r in why_node(now, "n")["reasons"] if r["code"] == "running"]

    (reason,) = eventually(running, 30, "the step never showed as running")
    assert reason["transactional"] is True
    assert "in one database transaction with its result" in reason["message"]
    assert live.wait(execution.pk).status == "succeeded"


# --- kill -9 mid-transaction (PostgreSQL) -------------------------------------------

needs_kills = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="SQLite runs the same steps without kills"
)


def wait_for_mark(mark: Path, execution: Execution, attempt: int) -> None:
    """Until the step's attempt has written its row and is inside its sleep."""
    line = f"{execution.pk} n {attempt}"
    eventually(
        lambda: mark.exists() and line in mark.read_text().splitlines(),
        60,
        f"attempt {attempt} never wrote its row",
    )


def kill_holder(live: Engine, execution: Execution, attempt: int) -> None:
    """kill -9 the worker running the attempt, and start another in its place."""
    row = Attempt.objects.get(execution=execution, node_id="n", attempt=attempt)
    assert row.status == AttemptStatus.RUNNING, row.status
    live.kill_worker(live.worker_holding(row))
    live.start_worker()


def killed_mid_sleep(
    live: Engine, tmp_path: Path, function: str, kills: int
) -> tuple[Execution, Callable[[], list[str]]]:
    mark = tmp_path / f"{function}.marks"
    node = {**step(function, seconds=3, mark=str(mark)), "heartbeat_timeout_seconds": 2}
    execution = start(one_step(node, max_attempts=kills + 1))
    for attempt in range(1, kills + 1):
        wait_for_mark(mark, execution, attempt)
        kill_holder(live, execution, attempt)
    done = live.wait(execution.pk, timeout=180)
    assert done.status == "succeeded", (done.error, timeline(done))
    return done, lambda: mark.read_text().splitlines()


@needs_kills
def test_killed_mid_transaction_again_and_again_one_row_and_one_result(
    live: Engine, tmp_path: Path
) -> None:
    kills = 3
    done, marks = killed_mid_sleep(live, tmp_path, "ledger.insert", kills)
    # Every attempt wrote its row; only the one whose result was recorded kept it.
    assert marks() == [f"{done.pk} n {attempt}" for attempt in range(1, kills + 2)]
    assert rows(done) == [kills + 1]
    timed_out = [("task_timed_out", attempt) for attempt in range(1, kills + 1)]
    assert results(done) == [*timed_out, ("task_completed", kills + 1)]
    assert events(done, "task_completed")[0].data["transactional"] is True
    assert_exact_history(done)


@needs_kills
def test_a_frozen_worker_that_wakes_after_its_lease_timed_out_commits_nothing(
    live: Engine, tmp_path: Path
) -> None:
    """The late result for real: the process running attempt 1 is stopped (SIGSTOP) right
    after its write, its lease lapses, the sweeper times it out and a live process runs
    attempt 2; woken up (SIGCONT), the first process finishes and records: refused, and its
    row is rolled back with it."""
    mark = tmp_path / "marks"
    node = {**step(seconds=1, mark=str(mark)), "heartbeat_timeout_seconds": 2}
    execution = start(one_step(node, max_attempts=2))
    wait_for_mark(mark, execution, 1)
    first = Attempt.objects.get(execution=execution, node_id="n", attempt=1)
    pid = int(first.worker_id.split(":")[1])
    os.kill(pid, signal.SIGSTOP)
    try:
        done = live.wait(execution.pk, timeout=60)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert done.status == "succeeded", (done.error, timeline(done))
    assert results(done) == [("task_timed_out", 1), ("task_completed", 2)]

    def refused() -> list[dict[str, Any]]:
        said = live.records(done.pk)
        return [r for r in said if r["message"].startswith("attempt's writes rolled back")]

    (record,) = eventually(refused, 30, "the woken attempt never tried to record")
    assert record["attempt"] == 1
    assert "its result was refused" in record["message"]
    assert rows(done) == [2]


@needs_kills
def test_the_plain_step_killed_the_same_way_keeps_the_dead_attempts_rows(
    live: Engine, tmp_path: Path
) -> None:
    """The control: killed where the transactional one was, a plain function's writes
    stay (the kills land after the write, so the test above proves something)."""
    done, _ = killed_mid_sleep(live, tmp_path, "ledger.insert_plain", 1)
    assert rows(done) == [1, 2]
    assert results(done) == [("task_timed_out", 1), ("task_completed", 2)]
