"""Transactional functions (`@workflow_function(name, transactional=True)`): the function's
database writes and its recorded result in one transaction on the engine's database.

    BEGIN
      bound the transaction (WORKFLOW_TRANSACTIONAL_TIMEOUT_SECONDS)
      SAVEPOINT; fn(input, ctx)        raised: ROLLBACK TO SAVEPOINT, its failure recorded
      the result: the attempt's conditional UPDATE (running, this worker's claim)
      refused (lease lost, cancelled, timed out, a second delivery): ROLLBACK, writes and all
    COMMIT: writes and result together; what follows (the inbox's look, messages) on commit

A worker killed anywhere before COMMIT leaves neither: the database rolls back the open
transaction of a dead connection, the lease lapses, the sweeper times the attempt out, and
the retry starts from a database without the writes. The sweeper's timeout and the result
UPDATE the same attempt row: whichever commits first wins and the other is refused, so a
result that comes after its lease was given up never commits its writes.

Bounds. On PostgreSQL each statement and each idle gap while the function runs is cut off
at the timeout (`statement_timeout`, `idle_in_transaction_session_timeout`, and from
version 17 `transaction_timeout`), which ends the attempt retryable with its writes rolled
back. On
SQLite the transaction holds the database's write lock from BEGIN (IMMEDIATE) to its end,
so every other writer waits meanwhile: a statement still running at the timeout is
interrupted. On both, a function that returns past the timeout fails (retryable) with its
writes rolled back, and the attempt's hard limit (the watchdog) ends a function that never
returns, its process and so its transaction with it. A transactional function cannot
heartbeat (ctx.heartbeat() and ctx.sleep() raise): the lease keeper renews its lease while
the process lives.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import InterfaceError, InternalError, OperationalError, connection, transaction

from executions.engine.events import EventType
from executions.engine.faults import CRASH_AFTER_EFFECT
from executions.services.attempts import attempt_record_in_transaction
from executions.services.recorded import recordable
from executions.worker.faults import crash_after_effect, delay_result
from nodes.context import Claimed, NodeContext
from nodes.errors import NodeError
from nodes.tasks import execute
from workflows.conf import engine_settings

log = logging.getLogger(__name__)

#: SQLite calls the progress handler every this many virtual machine instructions.
SQLITE_PROGRESS_STEPS = 1000


class TransactionLost(Exception):
    """The transaction ended under the function (a timeout cut it off, the database went
    away): its writes are gone, and `error` is the failure to record in a new one."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error["message"])
        self.error = error


class _Undone(Exception):
    """Rolls the transaction back: the result is not to be recorded (or was refused)."""


def run_in_transaction(
    claimed: Claimed,
    ctx: NodeContext,
    worker: str,
    *,
    lost: threading.Event,
    release: Callable[[], None],
    claim_next: bool,
) -> Claimed | None:
    """Run the function and record its result in one transaction; returns the attempt
    claimed next (eager dispatch), if any. `release` lets go of the lease's renewals
    before the attempt row is updated, so that none queues on this transaction's lock.
    Raises TransactionLost, for the caller to record that failure in a new transaction."""
    seconds = engine_settings.TRANSACTIONAL_TIMEOUT_SECONDS
    crashed = False
    try:
        with transaction.atomic():
            if connection.vendor == "sqlite":
                # Nobody can time the attempt out while this transaction holds the write
                # lock: a renewal would only wait for it.
                release()
            output, error = _call(claimed, ctx, seconds)
            if claimed.faults:
                delay_result(claimed, lost)  # the lease renewed meanwhile, as for any
                # The hand-back of a crash is made once the transaction has rolled back
                # (inside it, the rollback would undo it).
                crashed = CRASH_AFTER_EFFECT in claimed.faults
                if crashed:
                    raise _Undone("a crash was injected after its effect")
            release()
            if lost.is_set():
                raise _Undone("its lease was lost (cancelled or timed out)")
            recorded, nxt = attempt_record_in_transaction(
                claimed=claimed, worker_id=worker, output=output, error=error, claim_next=claim_next
            )
            if not recorded:
                raise _Undone("its result was refused (no longer this worker's attempt)")
    except _Undone as why:
        log.info("attempt's writes rolled back: %s", why)
        if crashed:
            crash_after_effect(claimed, worker)
        return None
    except (OperationalError, InterfaceError, InternalError) as exc:
        # InternalError: PostgreSQL ending the session for its idle-in-transaction timeout.
        connection.close()  # whatever state it is in: the failure goes in on a new one
        raise TransactionLost(_lost(exc, seconds)) from exc
    finally:
        release()
    if error is None:
        log.info("attempt succeeded; its writes committed with its result")
    return nxt


def _call(claimed: Claimed, ctx: NodeContext, seconds: float) -> tuple[Any, dict | None]:
    """(output, None), or (None, error) with the function's writes rolled back to the
    savepoint taken before it."""
    began = time.monotonic()
    savepoint = transaction.savepoint()
    try:
        with bounded(seconds):
            output = execute(claimed, ctx)
    except NodeError as exc:
        transaction.savepoint_rollback(savepoint)
        return None, exc.as_dict()
    took = time.monotonic() - began
    problem = None
    if took > seconds:
        problem = _timeout(f"the function returned after {took:.3g} s")
    else:
        kind, data = recordable(EventType.TASK_COMPLETED, {"output": output})
        if kind != EventType.TASK_COMPLETED:
            problem = data["error"]  # an output that cannot be recorded: no half-done step
    if problem is not None:
        transaction.savepoint_rollback(savepoint)
        return None, problem
    transaction.savepoint_commit(savepoint)
    return output, None


@contextmanager
def bounded(seconds: float) -> Iterator[None]:
    """The database's own bound on the transaction, as far as each backend has one."""
    if connection.vendor == "postgresql":
        ms = str(max(1, int(seconds * 1000)))
        names = ["statement_timeout", "idle_in_transaction_session_timeout"]
        if getattr(connection, "pg_version", 0) >= 170000:
            names.append("transaction_timeout")
        before = _set_local(names, [ms] * len(names))
        yield
        # Back as they were for the recording, and for an enclosing transaction (a test's,
        # under workflows.testing). A function that raised is rolled back to the savepoint
        # taken before these were set, which undoes them.
        _set_local(names, before)
    elif connection.vendor == "sqlite":
        raw = connection.connection
        deadline = time.monotonic() + seconds
        # A nonzero answer interrupts the statement under way (OperationalError).
        raw.set_progress_handler(lambda: int(time.monotonic() > deadline), SQLITE_PROGRESS_STEPS)
        try:
            yield
        finally:
            raw.set_progress_handler(None, 0)
    else:
        yield


def _set_local(names: list[str], values: list[str]) -> list[str]:
    """SET LOCAL each setting (set_config(..., true): until the transaction ends) and
    return what each was."""
    reads = ", ".join("current_setting(%s)" for _ in names)
    sets = ", ".join("set_config(%s, %s, true)" for _ in names)
    params = [*names, *(v for pair in zip(names, values, strict=True) for v in pair)]
    with connection.cursor() as cursor:
        # The target list is evaluated left to right: each read comes before any set.
        cursor.execute(f"SELECT {reads}, {sets}", params)
        row = cursor.fetchone()
    return [str(value) for value in row[: len(names)]]


def _timeout(what: str) -> dict[str, Any]:
    seconds = engine_settings.TRANSACTIONAL_TIMEOUT_SECONDS
    return {
        "type": "TransactionTimeout",
        "message": f"{what}, past WORKFLOW_TRANSACTIONAL_TIMEOUT_SECONDS ({seconds:g} s): "
        "its writes were rolled back. Keep a transactional function short, or raise the "
        "setting.",
        "retryable": True,
    }


def _lost(exc: Exception, seconds: float) -> dict[str, Any]:
    return {
        "type": "TransactionLost",
        "message": f"the function's transaction ended before its result was recorded "
        f"(a statement or an idle gap past WORKFLOW_TRANSACTIONAL_TIMEOUT_SECONDS = "
        f"{seconds:g} s, or the database connection was lost): its writes were rolled "
        f"back: {exc}",
        "retryable": True,
    }
