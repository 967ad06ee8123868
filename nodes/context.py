"""What a running node knows about its attempt, and how it talks back to the worker: the
interface between the worker runtime (executions/worker/) and the executors (nodes/)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nodes.errors import NodeCancelled, NodeError

if TYPE_CHECKING:
    from workflows.dsl import Node

# A sleeping node wakes at least this often to check for cancellation ...
SLEEP_STEP_SECONDS = 0.1
# ... and renews its lease at least this often.
HEARTBEAT_EVERY_SECONDS = 0.5


@dataclass(frozen=True)
class Claimed:
    """What a worker needs to run an attempt it now holds (executions/services/attempts.py
    claims it; nodes.tasks.execute runs it)."""

    attempt_id: int
    execution_id: str
    node: Node
    attempt: int
    input: Any
    lease_seconds: float
    #: The template context at claim time, for secrets that only the worker may resolve.
    context: dict[str, Any] | None = None
    #: The faults injected into this attempt (executions/engine/faults.py), by name:
    #: {"crash_after_effect": {...}, "delay_result": {"seconds": s, ...}}. Empty: none.
    faults: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class NodeContext:
    """The second argument of every workflow function.

    The worker injects ``_heartbeat`` and ``_is_cancelled``; functions only call
    :meth:`heartbeat`, read :attr:`cancelled`, or use :meth:`sleep`.
    """

    #: The execution's id (a UUID as text).
    execution_id: str
    #: The node's id in the definition (``"team"``, or ``"fanout[3]"`` for a map task).
    node_id: str
    #: The attempt number, counting from 1.
    attempt: int
    #: Stable across retries of the node: ``"<execution_id>:<node_id>"``. Use it to make
    #: side effects safe to repeat (HTTP nodes send it as ``Idempotency-Key``).
    idempotency_key: str = ""
    #: True for a function registered with transactional=True: it runs inside the
    #: transaction that records its result, and may not heartbeat (or ctx.sleep).
    transactional: bool = False
    #: Renews the attempt's lease; returns False when the attempt was cancelled or the
    #: lease was lost. None: heartbeats are no-ops (tests, local runs).
    _heartbeat: Callable[[], bool] | None = field(default=None, repr=False)
    #: Returns True once the attempt has been cancelled. Optional.
    _is_cancelled: Callable[[], bool] | None = field(default=None, repr=False)
    #: Set by :meth:`cancel` or by a failed heartbeat; wakes :meth:`sleep` at once.
    _cancel_event: threading.Event = field(default_factory=threading.Event, repr=False)

    def __post_init__(self) -> None:
        if not self.idempotency_key:
            self.idempotency_key = f"{self.execution_id}:{self.node_id}"

    @property
    def cancelled(self) -> bool:
        """True once the attempt was cancelled or its lease lost."""
        if self._cancel_event.is_set():
            return True
        if self._is_cancelled is not None and self._is_cancelled():
            self._cancel_event.set()
            return True
        return False

    def cancel(self) -> None:
        """Mark the attempt cancelled (called by the worker, e.g. from a lease thread)."""
        self._cancel_event.set()

    def heartbeat(self) -> None:
        """Renew the lease. Raises NodeCancelled if the attempt should stop."""
        if self.transactional:
            raise NodeError(
                "ctx.heartbeat() (and ctx.sleep()) cannot be called from a transactional "
                "function: its work must be short, bounded by "
                "WORKFLOW_TRANSACTIONAL_TIMEOUT_SECONDS. Make long work a plain function.",
                type="HeartbeatInTransaction",
                retryable=False,
            )
        if self._cancel_event.is_set():
            raise NodeCancelled()
        if self._heartbeat is not None and not self._heartbeat():
            self._cancel_event.set()
            raise NodeCancelled()

    def raise_if_cancelled(self) -> None:
        """Raise NodeCancelled if the attempt was cancelled (no lease renewal)."""
        if self.cancelled:
            raise NodeCancelled()

    def sleep(self, seconds: float) -> None:
        """Sleep, heartbeating every HEARTBEAT_EVERY_SECONDS; raise NodeCancelled early
        if the attempt is cancelled meanwhile."""
        deadline = time.monotonic() + max(0.0, seconds)
        self.heartbeat()
        last_beat = time.monotonic()
        while True:
            self.raise_if_cancelled()
            now = time.monotonic()
            if now >= deadline:
                return
            if now - last_beat >= HEARTBEAT_EVERY_SECONDS:
                self.heartbeat()
                last_beat = now
            self._cancel_event.wait(min(SLEEP_STEP_SECONDS, deadline - now))
