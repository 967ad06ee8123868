"""The worker runtime: claim an attempt, run it under a lease and a watchdog, record its
one result, and (eager dispatch) run the execution's next attempt in the same message.

The executors (nodes/) know nothing of this: they get a Claimed and a NodeContext
(nodes/context.py), whose heartbeat and cancellation this runtime backs with the lease;
`nodes.tasks.execute` picks the kind's executor. Dependencies point one way: executions
imports nodes, never the reverse (tests/unit/test_app_boundaries.py).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from django.db import InterfaceError, OperationalError, connection

from executions.kernel.lock import after_commit, looking_after
from executions.services.attempts import (
    attempt_claim,
    attempt_complete,
    attempt_complete_and_claim_next,
    attempt_fail,
)
from executions.services.children import child_start
from executions.services.containment import attempt_boundary
from executions.worker.faults import crashed_after_effect
from executions.worker.lease import Keeper, Lease, lease_keeper
from executions.worker.transactional import TransactionLost, run_in_transaction
from executions.worker.watchdog import Watchdog, attempt_scope
from nodes import tracing
from nodes.context import Claimed, NodeContext
from nodes.errors import NodeCancelled, NodeError
from nodes.executors.function import transactional
from nodes.tasks import execute
from workflows import logs
from workflows.celery import NODES_QUEUE, engine_task
from workflows.conf import engine_settings
from workflows.kinds import get_kind

log = logging.getLogger(__name__)
T = TypeVar("T")

#: How long a finished attempt keeps trying to record its result through a database outage.
RECORD_RETRY_SECONDS = 60.0


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"


#: How long an attempt runs before its lease keeper logs what waits in its execution's
#: inbox: its own claim (so it shows as running) and what others left while this worker,
#: chaining eagerly, let its unit skip the look after commit (kernel/lock.py).
SHOW_RUNNING_AFTER = 0.05


def show_running(claimed: Claimed) -> None:
    """Drain the execution's inbox now that the attempt runs on. A failure is the
    sweeper's to retry, never the attempt's."""
    after_commit(claimed.execution_id, claims=True)


def stall_grace_seconds(progress_seconds: float) -> float:
    """How long a function that stopped making progress may still take to return (at its
    next ctx.heartbeat() it learns it must stop) before its process is replaced."""
    return min(30.0, max(2.0, 0.1 * progress_seconds))


#: Attempts one message may run back to back in its execution before handing back.
EAGER_LIMIT = 100


# Named as it was when it lived in nodes/tasks.py: messages already queued carry that name.
@engine_task(queue=NODES_QUEUE, name="nodes.tasks.run_task")
def run_task(attempt_id: int) -> None:
    """Run the attempt, then (eager dispatch) the execution's next held attempt, which the
    success's own transaction claimed for this worker: no broker round trip, no second
    lock, and no message at all (a held attempt has none: executions/kernel/capacity.py).
    The claim stays the one atomic hand-off either way."""
    run_attempt(attempt_id)


def run_attempt(attempt_id: int, *, keeper: Keeper | None = None) -> None:
    """run_task's body. `keeper`: who renews the leases (the process's LeaseKeeper thread,
    unless workflows.testing runs the attempt inline with one that renews nothing)."""
    worker = worker_id()
    logs.bind(worker=worker)
    # A fault boundary (executions/services/containment.py): an engine exception while
    # claiming, recording or advancing ends this attempt's execution with an engine error.
    # Its end looks at what the message still owes (kernel/lock.py "The look at the end of
    # a block"): only a lock of this worker's let go with no look after it (an eager unit
    # left its look to this worker's next one, which did not come: the last attempt lost
    # its lease, or stopped cancelled), or a look that stopped at LOOK_UNITS. Every other
    # lock was looked after already.
    with attempt_boundary(attempt_id), looking_after():
        claimed = attempt_claim(attempt_id=attempt_id, worker_id=worker)
        for done in range(1, EAGER_LIMIT + 1):
            if claimed is None:
                break  # a duplicate delivery, a cancelled or timed-out attempt, or no next
            # The last one claims nothing: what it claimed would wait for its lease to end.
            # With per-type queues, every attempt goes through its own queue's workers.
            eager = done < EAGER_LIMIT and not engine_settings.NODE_QUEUES
            claimed = run_claimed(claimed, worker, claim_next=eager, keeper=keeper)


def run_claimed(
    claimed: Claimed, worker: str, *, claim_next: bool = True, keeper: Keeper | None = None
) -> Claimed | None:
    """Run and record one claimed attempt; returns the next attempt claimed, if any.

    Under a watchdog: past the attempt's hard limit its failure is recorded and, in a pool
    child, the process replaced, so no function can hold a worker slot forever."""
    watchdog = Watchdog(claimed, worker).arm()
    where = {"execution_id": claimed.execution_id, "node_id": claimed.node.id}
    try:
        with (
            attempt_scope(claimed, worker),
            tracing.attempt_span(
                **where, node_type=claimed.node.type, attempt=claimed.attempt, worker=worker
            ),
        ):
            log.info("attempt started (%s)", claimed.node.type)
            keeper = keeper or lease_keeper()
            return _run_claimed(claimed, worker, watchdog, keeper, claim_next=claim_next)
    finally:
        watchdog.disarm()


def _run_claimed(
    claimed: Claimed, worker: str, watchdog: Watchdog, keeper: Keeper, *, claim_next: bool
) -> Claimed | None:
    attempt_id = claimed.attempt_id
    kind = get_kind(claimed.node.type)
    in_transaction = transactional(claimed.node)
    progress = claimed.node.heartbeat_timeout_seconds
    if kind is None or not kind.heartbeats_progress or in_transaction:
        progress = None  # a transactional function cannot heartbeat: its bound is the timeout
    lease = keeper.register(
        Lease(
            claimed,
            worker,
            progress_seconds=progress,
            on_stall=lambda: watchdog.reclaim_after(stall_grace_seconds(progress or 0.0)),
            running_after=SHOW_RUNNING_AFTER,
            on_running=lambda: show_running(claimed),
        )
    )
    ctx = NodeContext(
        execution_id=claimed.execution_id,
        node_id=claimed.node.id,
        attempt=claimed.attempt,
        idempotency_key=f"{claimed.execution_id}:{claimed.node.id}",
        transactional=in_transaction,
        _heartbeat=lease.beat,
        _is_cancelled=lease.lost.is_set,
    )
    if kind is not None and kind.starts_child:
        try:
            child_start(claimed=claimed, worker_id=worker)
        finally:
            keeper.unregister(lease)
        return None
    if in_transaction:
        release = partial(keeper.unregister, lease)
        return _run_in_transaction(claimed, ctx, worker, lease, release, claim_next=claim_next)
    began = time.monotonic()
    try:
        output = execute(claimed, ctx)
        if claimed.faults and crashed_after_effect(claimed, lease.lost, worker):
            return None
    except NodeCancelled:
        log.info("attempt stopped: cancelled or timed out")
        return None
    except NodeError as exc:
        if claimed.faults and crashed_after_effect(claimed, lease.lost, worker):
            return None
        error = exc.as_dict()
        tracing.attempt_failed(error)
        log.info("attempt failed after %.3fs: %s: %s", time.monotonic() - began,
                 error.get("type"), error.get("message"))  # fmt: skip
        if not lease.lost.is_set():
            record(
                attempt_fail, attempt_id=attempt_id, worker_id=worker, error=error, claimed=claimed
            )
        return None
    finally:
        keeper.unregister(lease)
    if lease.lost.is_set():
        log.info("attempt stopped: its lease was lost (cancelled or timed out)")
        return None
    log.info("attempt succeeded after %.3fs", time.monotonic() - began)
    if not claim_next:
        record(
            attempt_complete, attempt_id=attempt_id, worker_id=worker, output=output,
            claimed=claimed,
        )  # fmt: skip
        return None
    return record(
        attempt_complete_and_claim_next,
        attempt_id=attempt_id,
        worker_id=worker,
        output=output,
        claimed=claimed,
    )


def _run_in_transaction(
    claimed: Claimed,
    ctx: NodeContext,
    worker: str,
    lease: Lease,
    release: Callable[[], None],
    *,
    claim_next: bool,
) -> Claimed | None:
    """A transactional function: its writes and its result in one transaction
    (executions/worker/transactional.py)."""
    try:
        return run_in_transaction(
            claimed, ctx, worker, lost=lease.lost, release=release, claim_next=claim_next
        )
    except NodeCancelled:
        log.info("attempt stopped: cancelled or timed out; its writes were rolled back")
    except TransactionLost as lost:
        tracing.attempt_failed(lost.error)
        log.info("attempt failed: %s", lost.error["message"])
        record(attempt_fail, attempt_id=claimed.attempt_id, worker_id=worker,
               error=lost.error, claimed=claimed)  # fmt: skip
    return None


def record(finish: Callable[..., T], **kwargs: Any) -> T:
    """Record the attempt's result, reconnecting through a short database outage rather
    than losing work that is done. Repeating is safe: the attempt's conditional update
    refuses a second result, even after a commit whose acknowledgement was lost."""
    deadline = time.monotonic() + RECORD_RETRY_SECONDS
    while True:
        try:
            return finish(**kwargs)
        except (OperationalError, InterfaceError):
            connection.close()
            if time.monotonic() >= deadline:
                raise
            log.warning("recording attempt %s failed; will retry", kwargs.get("attempt_id"))
            time.sleep(1.0)
