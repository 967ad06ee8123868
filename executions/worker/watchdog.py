"""The hard limit of an attempt: past it, the worker process is replaced.

The sweeper times an attempt out by its lease or deadline, and a cooperative function
stops at its next heartbeat. When the node's own timeout_seconds is the bound that
expired, the watchdog records the same fact the sweeper would (a retryable timeout), so a
sweeper slowed down by load cannot turn a timeout into a non-retryable failure.

A function that never returns (a C call, a lost socket without timeout, a busy loop)
would still hold its worker process forever; this watchdog records the attempt's end and
ends the process, and the Celery pool starts a fresh one in its place (the message goes
back to the broker and is dropped at the next claim).

Only a prefork pool child may end itself (`replace_process_on_expiry`, set by
config/celery.py at worker_process_init): in any other process the watchdog records the
failure and leaves the thread to finish on its own.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager

from django.db import connection

from executions.services.attempts import DEADLINE_PASSED, attempt_fail, attempt_time_out
from nodes.context import Claimed
from workflows import logs
from workflows.dsl.limits import limits, setting_of

log = logging.getLogger(__name__)

#: The exit status of a replaced process, for whoever reads the pool's log.
EXIT_STATUS = 70
#: Set in prefork pool children only: there, ending the process frees the slot.
replace_process_on_expiry = False


def bound_by_timeout(claimed: Claimed) -> bool:
    """Whether the node's timeout_seconds, not WORKFLOW_ATTEMPT_HARD_LIMIT_SECONDS, binds."""
    timeout = claimed.node.timeout_seconds
    return timeout is not None and timeout <= limits().attempt_hard_limit_seconds


def hard_limit_seconds(claimed: Claimed) -> float:
    """WORKFLOW_ATTEMPT_HARD_LIMIT_SECONDS, or timeout_seconds when smaller, plus a grace
    that leaves the sweeper time to record the timeout and the function time to notice."""
    limit = limits().attempt_hard_limit_seconds
    if claimed.node.timeout_seconds is not None:
        limit = min(limit, claimed.node.timeout_seconds)
    return limit + min(30.0, max(2.0, 0.1 * limit))


def attempt_scope(claimed: Claimed, worker: str) -> AbstractContextManager[None]:
    """The log context of one attempt (workflows/logs.py), for each thread that works on it:
    a thread starts with an empty context of its own."""
    return logs.scope(
        execution_id=claimed.execution_id,
        node_id=claimed.node.id,
        attempt=claimed.attempt,
        worker=worker,
    )


def _exit() -> None:
    os._exit(EXIT_STATUS)


class Watchdog:
    """Armed for one attempt; `disarm()` when it ends by itself."""

    def __init__(self, claimed: Claimed, worker: str, *, exit: Callable[[], None] = _exit) -> None:
        self.claimed, self.worker, self._exit = claimed, worker, exit
        self.seconds = hard_limit_seconds(claimed)
        self.fired = threading.Event()
        self._timer = threading.Timer(self.seconds, self._expire)
        self._timer.daemon = True
        self._timer.name = f"watchdog-{claimed.attempt_id}"
        self._reclaim: threading.Timer | None = None

    def arm(self) -> Watchdog:
        self._timer.start()
        return self

    def disarm(self) -> None:
        self._timer.cancel()
        if self._reclaim is not None:
            self._reclaim.cancel()

    def reclaim_after(self, seconds: float) -> None:
        """The attempt already has its result (its function stopped making progress): if
        the function has not returned `seconds` from now, free its process slot all the
        same, as the hard limit would, without waiting for it."""
        self._reclaim = threading.Timer(seconds, self._replace)
        self._reclaim.daemon = True
        self._reclaim.start()

    def _replace(self) -> None:
        self.fired.set()
        log.error(
            "execution %s: attempt %s of %s made no progress and did not stop: its worker "
            "process was replaced",
            self.claimed.execution_id,
            self.claimed.attempt,
            self.claimed.node.id,
        )
        if replace_process_on_expiry:
            self._exit()

    def _expire(self) -> None:
        with attempt_scope(self.claimed, self.worker):
            self._record_expiry()

    def _record_expiry(self) -> None:
        self.fired.set()
        claimed = self.claimed
        message = (
            f"attempt {claimed.attempt} of {claimed.node.id} still ran after "
            f"{self.seconds:g} s, past its hard limit (the node's timeout_seconds, or "
            f"{setting_of('attempt_hard_limit_seconds')} = "
            f"{limits().attempt_hard_limit_seconds:g} s): its worker process was replaced"
        )
        log.error("execution %s: %s", claimed.execution_id, message)
        try:
            if bound_by_timeout(claimed):
                attempt_time_out(attempt_id=claimed.attempt_id, reason=DEADLINE_PASSED)
            else:
                attempt_fail(
                    attempt_id=claimed.attempt_id,
                    worker_id=self.worker,
                    error={"type": "HardTimeLimit", "message": message, "retryable": False},
                )
        except Exception:
            log.exception("recording the hard limit of attempt %s failed", claimed.attempt_id)
        finally:
            connection.close()
        if replace_process_on_expiry:
            self._exit()
