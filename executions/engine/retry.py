"""Retry decisions: policy-based, with jitter that is a pure function of its inputs."""

from __future__ import annotations

import hashlib
import math

from executions.engine.errors import ErrorRecord
from workflows.dsl import RetryPolicy

#: Jitter shortens a delay by up to this fraction, so it never exceeds the policy's cap.
JITTER_FRACTION = 0.2


def jitter_fraction(execution_id: str, node_id: str, attempt: int) -> float:
    """A number in [0, 1) that is the same every time for the same attempt."""
    digest = hashlib.sha256(f"{execution_id}:{node_id}:{attempt}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def retry_delay(
    policy: RetryPolicy,
    *,
    execution_id: str,
    node_id: str,
    attempt: int,
    tries: int | None = None,
    error: ErrorRecord | None = None,
) -> float:
    """Seconds to wait after failed `attempt` before the next one.

    `tries` (attempts since the last operator retry; default `attempt`) sets the backoff
    step; `attempt` itself seeds the jitter, so every attempt's jitter is its own.
    """
    step = tries if tries is not None else attempt
    delay = _backoff(policy, step)
    if policy.jitter:
        delay *= 1 - JITTER_FRACTION * jitter_fraction(execution_id, node_id, attempt)
    retry_after = error.details.get("retry_after_seconds") if error is not None else None
    if (
        isinstance(retry_after, int | float)
        and not isinstance(retry_after, bool)
        and math.isfinite(retry_after)
    ):
        # A server that says when to come back is believed, up to the policy's cap.
        delay = max(delay, min(float(retry_after), policy.max_interval_seconds))
    return round(delay, 3)


def should_retry(policy: RetryPolicy, *, attempt: int, error: ErrorRecord | None) -> bool:
    if error is not None:
        if error.retryable is False:
            return False
        if error.type in policy.non_retryable_errors:
            return False
    return attempt < policy.max_attempts


def parks(policy: RetryPolicy, *, attempt: int, error: ErrorRecord | None, given_up: bool) -> bool:
    """Out of attempts (not refused by its error) under on_exhausted "park", and not failed
    by an operator since: the node waits, parked, instead of failing."""
    if policy.on_exhausted != "park" or given_up:
        return False
    if error is not None and (
        error.retryable is False or error.type in policy.non_retryable_errors
    ):
        return False
    return attempt >= policy.max_attempts


def _backoff(policy: RetryPolicy, step: int) -> float:
    """initial * coefficient^(step-1), capped; never overflows however many attempts."""
    if policy.backoff_coefficient > 1:
        ratio = policy.max_interval_seconds / policy.initial_interval_seconds
        if step - 1 >= math.log(max(ratio, 1.0), policy.backoff_coefficient) + 1:
            return policy.max_interval_seconds
    delay = policy.initial_interval_seconds * policy.backoff_coefficient ** (step - 1)
    return min(delay, policy.max_interval_seconds)
