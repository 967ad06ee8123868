"""Attempt leases, renewed by one long-lived thread per worker process.

A thread per attempt cost about a tenth of a chain hop (start and join, every attempt,
though a quick one never renews at all). Here an attempt registers
its Lease with the process's LeaseKeeper and unregisters it when it ends; the keeper
sleeps until the earliest renewal is due, so a short attempt costs a lock and a set
insertion, and the keeper wakes only for attempts that outlive their first interval.

What a lease means is unchanged: a refused renewal marks it lost (ctx.heartbeat() then
raises NodeCancelled, and the runtime records nothing); with `progress_seconds` (a
function's heartbeat_timeout_seconds) a function that stopped calling ctx.heartbeat()
is recorded timed out by the keeper, which then calls `on_stall` (the watchdog frees the
process slot if the function does not return); a database outage is waited out. An
attempt still running shortly after it began gets one `on_running` call from the keeper
(the runtime drains its execution's inbox then: executions/worker/runtime.py).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable

from django.db import InterfaceError, OperationalError, connection

from executions.services.attempts import attempt_renew, attempt_stalled
from executions.worker.threads import PerProcess
from executions.worker.watchdog import attempt_scope
from nodes.context import Claimed

log = logging.getLogger(__name__)

#: How long unregistering waits for a renewal of the same lease already under way.
UNREGISTER_WAIT_SECONDS = 5.0


class Lease:
    """One running attempt's lease. `renew()` and `beat()` may be called from any thread:
    each uses that thread's own database connection."""

    def __init__(
        self,
        claimed: Claimed,
        worker: str,
        *,
        progress_seconds: float | None = None,
        on_stall: Callable[[], None] | None = None,
        running_after: float = 0.0,
        on_running: Callable[[], None] | None = None,
    ):
        self.claimed, self.worker = claimed, worker
        self.lost = threading.Event()
        self.progress_seconds, self.on_stall = progress_seconds, on_stall
        self.last_progress = time.monotonic()
        interval = max(0.2, claimed.lease_seconds / 3)
        if progress_seconds is not None:
            interval = min(interval, max(0.2, progress_seconds / 4))
        self.interval = interval
        #: Called once by the keeper if the attempt still runs `running_after` seconds
        #: after it registered (the runtime's show_running), before its first renewal.
        self.on_running = on_running
        self.due = self.last_progress + (running_after if on_running else interval)
        #: Set once unregistered: the keeper then leaves the lease alone.
        self.ended = False
        #: Held by the keeper while it renews (or stalls) this lease, so that unregistering
        #: returns only after that renewal, and `lost` is final when the runtime reads it.
        self.busy = threading.Lock()

    def beat(self) -> bool:
        """ctx.heartbeat(): the function made progress. Renews the lease now."""
        if self.lost.is_set():
            return False
        self.last_progress = time.monotonic()
        return self.renew()

    def stalled(self) -> bool:
        if self.progress_seconds is None:
            return False
        return time.monotonic() - self.last_progress > self.progress_seconds

    def stall(self) -> None:
        seconds = self.progress_seconds or 0.0
        self.lost.set()  # from now on ctx.heartbeat() raises NodeCancelled
        recorded = attempt_stalled(
            attempt_id=self.claimed.attempt_id, worker_id=self.worker, seconds=seconds
        )
        if recorded and self.on_stall is not None:
            self.on_stall()

    def renew(self) -> bool:
        try:
            ok = attempt_renew(
                attempt_id=self.claimed.attempt_id,
                worker_id=self.worker,
                lease_seconds=self.claimed.lease_seconds,
            )
        except (OperationalError, InterfaceError):
            if connection.in_atomic_block:
                raise
            # The database is away for a moment: the lease stands or lapses on its own, and
            # the next renewal, on a new connection, tells which. Giving up here would lose
            # a healthy attempt to the sweeper however short the outage.
            connection.close()
            log.warning("lease renewal of attempt %s failed; will retry", self.claimed.attempt_id)
            return True
        if not ok:
            self.lost.set()
        return ok

    def tend(self) -> bool:
        """One turn of the keeper: stall or renew. False: the keeper is done with it."""
        if self.on_running is not None:
            on_running, self.on_running = self.on_running, None
            on_running()
            self.due = time.monotonic() + self.interval
            return True
        if self.stalled():
            self.stall()
            return False
        if not self.renew():
            return False
        self.due = time.monotonic() + self.interval
        return True


class LeaseKeeper(threading.Thread):
    """Renews every lease registered with it, each at its own interval, in one thread
    (with its own database connection, open only while some lease needed a renewal)."""

    def __init__(self) -> None:
        super().__init__(name="lease-keeper", daemon=True)
        self.pid = os.getpid()
        self._leases: set[Lease] = set()
        self._wake = threading.Condition()
        self._wake_at: float | None = None  # when the keeper's wait ends (None: never)
        self._stopped = False

    def register(self, lease: Lease) -> Lease:
        with self._wake:
            self._leases.add(lease)
            # Waking the thread costs a switch per attempt; needed only if this lease is
            # due before the keeper would wake anyway.
            if self._wake_at is None or lease.due < self._wake_at:
                self._wake.notify()
        return lease

    def unregister(self, lease: Lease) -> None:
        """The attempt ended: no renewal after this returns (one under way is waited for,
        up to UNREGISTER_WAIT_SECONDS)."""
        lease.ended = True
        with self._wake:
            self._leases.discard(lease)
        if lease.busy.acquire(timeout=UNREGISTER_WAIT_SECONDS):
            lease.busy.release()

    def stop(self) -> None:
        with self._wake:
            self._stopped = True
            self._wake.notify()

    def registered(self) -> int:
        with self._wake:
            return len(self._leases)

    def run(self) -> None:
        try:
            while (due := self._next_due()) is not None:
                for lease in due:
                    self._tend(lease)
        finally:
            connection.close()

    def _next_due(self) -> list[Lease] | None:
        """Wait for the leases due now (None: stopped). Idle, the keeper lets its database
        connection go, as a thread per attempt did when it ended: a process that runs
        only short attempts holds no second connection."""
        with self._wake:
            while not self._stopped:
                now = time.monotonic()
                due = [lease for lease in self._leases if lease.due <= now]
                if due:
                    self._wake_at = now
                    return due
                if not self._leases:
                    connection.close()
                self._wake_at = min((lease.due for lease in self._leases), default=None)
                self._wake.wait(None if self._wake_at is None else self._wake_at - now)
            return None

    def _tend(self, lease: Lease) -> None:
        with lease.busy:
            if lease.ended:
                return
            with attempt_scope(lease.claimed, lease.worker):
                try:
                    keep = lease.tend()
                except Exception:
                    log.warning(
                        "lease renewal failed for attempt %s",
                        lease.claimed.attempt_id,
                        exc_info=True,
                    )
                    connection.close()  # whatever state it is in, the next lease gets a new one
                    keep = False
            if not keep:
                with self._wake:
                    self._leases.discard(lease)


class InlineKeeper:
    """Renews nothing, in no thread: for attempts run inline, one at a time, in a process
    whose clock stands still while they run (workflows.testing). A function's own
    ctx.heartbeat() still renews its lease, and learns of a cancellation from it."""

    def register(self, lease: Lease) -> Lease:
        return lease

    def unregister(self, lease: Lease) -> None:
        lease.ended = True


#: Who renews a running attempt's lease.
Keeper = LeaseKeeper | InlineKeeper

#: This process's keeper (worker/threads.py).
lease_keeper: PerProcess[LeaseKeeper] = PerProcess(LeaseKeeper)
