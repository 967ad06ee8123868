"""Retry delays: exponential, capped, deterministic jitter, never an overflow."""

from __future__ import annotations

import pytest

from executions.engine.errors import ErrorRecord, record_of
from executions.engine.retry import retry_delay, should_retry
from workflows.dsl import RetryPolicy

POLICY = RetryPolicy(
    max_attempts=10**6,
    initial_interval_seconds=1.0,
    backoff_coefficient=2.0,
    max_interval_seconds=60.0,
    jitter=False,
)


@pytest.mark.parametrize(
    ("attempt", "expected"), [(1, 1.0), (2, 2.0), (3, 4.0), (6, 32.0), (7, 60.0), (5000, 60.0)]
)
def test_backoff_grows_then_caps(attempt: int, expected: float) -> None:
    assert retry_delay(POLICY, execution_id="e", node_id="n", attempt=attempt) == expected


def test_jitter_is_reproducible_shortens_only_and_differs_per_attempt() -> None:
    jittered = RetryPolicy(initial_interval_seconds=10.0, backoff_coefficient=1.0, jitter=True)
    delays = [retry_delay(jittered, execution_id="e", node_id="n", attempt=a) for a in (1, 2, 3)]
    again = [retry_delay(jittered, execution_id="e", node_id="n", attempt=a) for a in (1, 2, 3)]
    assert delays == again
    assert all(8.0 <= d <= 10.0 for d in delays)
    assert len(set(delays)) == 3


def test_retry_after_is_believed_up_to_the_cap() -> None:
    error = ErrorRecord(details={"retry_after_seconds": 30})
    assert retry_delay(POLICY, execution_id="e", node_id="n", attempt=1, error=error) == 30.0
    error = ErrorRecord.from_json({"retry_after_seconds": 3600})
    assert retry_delay(POLICY, execution_id="e", node_id="n", attempt=1, error=error) == 60.0


@pytest.mark.parametrize(
    ("error", "attempt", "expected"),
    [
        ({"type": "X"}, 1, True),
        ({"type": "X", "retryable": False}, 1, False),
        ({"type": "Fatal"}, 1, False),
        ({"type": "X"}, 3, False),
        ({}, 2, True),
        (None, 2, True),
        (None, 3, False),
    ],
)
def test_should_retry_table(error: dict | None, attempt: int, expected: bool) -> None:
    policy = RetryPolicy(max_attempts=3, non_retryable_errors=("Fatal",))
    assert should_retry(policy, attempt=attempt, error=record_of(error)) is expected


def test_record_of_is_the_stored_errors_record_whatever_came_before() -> None:
    first, second = {"type": "A", "retryable": False, "x": 1}, {"type": "B"}
    for raw in (first, first, second, None, first, {"type": "A", "retryable": False, "x": 1}):
        assert record_of(raw) == (ErrorRecord.from_json(raw) if raw is not None else None)
