"""The worker's side of fault injection (executions/engine/faults.py decides the faults):
what happens between a function's effect and the recording of its result."""

from __future__ import annotations

import logging
import threading

from executions.engine.faults import CRASH_AFTER_EFFECT, DELAY_RESULT
from executions.services.attempts import attempt_abandon
from nodes.context import Claimed

log = logging.getLogger(__name__)


def crashed_after_effect(claimed: Claimed, lost: threading.Event, worker: str) -> bool:
    """Delay the result if a delay_result fault says so (the lease is still renewed; a lost
    lease ends the wait), then, under crash_after_effect, drop the attempt: True means
    record nothing."""
    delay_result(claimed, lost)
    return crash_after_effect(claimed, worker)


def delay_result(claimed: Claimed, lost: threading.Event) -> None:
    delay = claimed.faults.get(DELAY_RESULT)
    if delay is not None:
        lost.wait(float(delay.get("seconds") or 0))


def crash_after_effect(claimed: Claimed, worker: str) -> bool:
    """Under crash_after_effect, let go of the attempt as a crash would: True means record
    nothing. Called outside any transaction of the attempt's (its hand-back must stick)."""
    if CRASH_AFTER_EFFECT not in claimed.faults:
        return False
    log.warning(
        "fault injected: attempt %s (%s#%s of %s) crashes after its effect",
        claimed.attempt_id,
        claimed.node.id,
        claimed.attempt,
        claimed.execution_id,
    )
    attempt_abandon(attempt_id=claimed.attempt_id, worker_id=worker)
    return True
