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

One clock thread per process keeps every armed watchdog's deadline (`_Clock`), as the
lease keeper keeps the leases (worker/lease.py): a timer thread per attempt cost its start
(which waits for the new thread to be scheduled) and its end on every hop of a chain,
most of the worker's own time per hop under load. An expiry still runs in a thread of its
own, started when it fires: a slow record never delays another attempt's.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from django.db import connection

from executions.services.attempts import DEADLINE_PASSED, attempt_fail, attempt_time_out
from executions.worker.threads import PerProcess
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
        #: Set once an expiry has run to its end (its record written, its exit decided).
        self.expired = threading.Event()
        self._armed: tuple[_Clock, _Entry] | None = None
        self._reclaim: threading.Timer | None = None

    def arm(self) -> Watchdog:
        clock = _clock()
        self._armed = clock, clock.add(time.monotonic() + self.seconds, self)
        return self

    def disarm(self) -> None:
        if self._armed is not None:
            clock, entry = self._armed
            clock.cancel(entry)
            self._armed = None
        if self._reclaim is not None:
            self._reclaim.cancel()

    def _fire(self) -> None:
        """Called by the clock at the deadline: the expiry in a thread of its own."""
        expiry = threading.Thread(
            target=self._expire, name=f"watchdog-{self.claimed.attempt_id}", daemon=True
        )
        expiry.start()

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
        try:
            with attempt_scope(self.claimed, self.worker):
                self._record_expiry()
        finally:
            self.expired.set()

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


#: An armed deadline in the clock's heap: [when (monotonic), order, its watchdog], the
#: watchdog None once disarmed (left in the heap until due or compacted away).
_Entry = list[Any]


class _Clock(threading.Thread):
    """Fires each armed watchdog at its deadline, in one thread for the process. Arming
    costs a lock and a heap push; the thread wakes only for the earliest deadline, and
    every deadline is the attempt's hard limit (an hour by default), so a short attempt
    never wakes it."""

    #: A heap this long, at least half of it disarmed, is compacted by the next disarm.
    COMPACT_AT = 256

    def __init__(self) -> None:
        super().__init__(name="watchdog-clock", daemon=True)
        self.pid = os.getpid()
        self._heap: list[_Entry] = []
        self._order = itertools.count()
        self._disarmed = 0
        self._wake = threading.Condition()

    def add(self, at: float, dog: Watchdog) -> _Entry:
        entry: _Entry = [at, next(self._order), dog]
        with self._wake:
            earliest = not self._heap or at < self._heap[0][0]
            heapq.heappush(self._heap, entry)
            if earliest:  # else the thread wakes before this one is due anyway
                self._wake.notify()
        return entry

    def cancel(self, entry: _Entry) -> None:
        with self._wake:
            if entry[2] is None:
                return
            entry[2] = None
            self._disarmed += 1
            heap = self._heap
            if len(heap) >= self.COMPACT_AT and 2 * self._disarmed >= len(heap):
                # Only later deadlines are left: the thread's wait ends early, and waits again.
                self._heap = [armed for armed in heap if armed[2] is not None]
                heapq.heapify(self._heap)
                self._disarmed = 0

    def armed(self) -> int:
        with self._wake:
            return len(self._heap) - self._disarmed

    def run(self) -> None:
        while True:
            for dog in self._due():
                try:
                    dog._fire()
                except Exception:  # a thread that cannot start must not stop the clock
                    log.exception("the watchdog of attempt %s could not fire",
                                  dog.claimed.attempt_id)  # fmt: skip

    def _due(self) -> list[Watchdog]:
        """Wait for the deadlines due now; the watchdogs still armed among them."""
        with self._wake:
            while True:
                now = time.monotonic()
                heap = self._heap
                due: list[Watchdog] = []
                while heap and heap[0][0] <= now:
                    entry = heapq.heappop(heap)
                    if entry[2] is None:
                        self._disarmed -= 1
                    else:
                        due.append(entry[2])
                        entry[2] = None  # fired: a disarm from now on has nothing to cancel
                if due:
                    return due
                self._wake.wait(heap[0][0] - now if heap else None)


#: This process's clock (worker/threads.py).
_clock: PerProcess[_Clock] = PerProcess(_Clock)
