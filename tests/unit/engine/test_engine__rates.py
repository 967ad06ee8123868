"""The token bucket arithmetic behind rate limits (executions/engine/rates.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from executions.engine.rates import next_token_at, refilled, whole

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("tokens", "seconds", "per_second", "burst", "expected"),
    [
        (0.0, 0.0, 5, 5, 0.0),
        (0.0, 0.5, 5, 5, 2.5),
        (0.0, 10.0, 5, 5, 5.0),  # never past the burst
        (4.0, 0.1, 5, 5, 4.5),
        (1.0, -3.0, 5, 5, 1.0),  # a clock read before the last refill adds nothing
        (0.25, 1.0, 0.5, 1, 0.75),
    ],
)
def test_refilled(tokens, seconds, per_second, burst, expected) -> None:
    now = T0 + timedelta(seconds=seconds)
    assert refilled(tokens, T0, now, per_second, burst) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("tokens", "expected"), [(0.0, 0), (0.999, 0), (0.9999999999, 1), (1.0, 1), (4.7, 4), (-2, 0)]
)
def test_whole(tokens, expected) -> None:
    assert whole(tokens) == expected


def test_next_token_at_counts_those_ahead() -> None:
    assert next_token_at(1.5, T0, 2) == T0
    assert next_token_at(0.5, T0, 2) == T0 + timedelta(seconds=0.25)
    assert next_token_at(0.5, T0, 2, waiting=2) == T0 + timedelta(seconds=1.25)


@given(
    gaps=st.lists(st.floats(min_value=0, max_value=3), min_size=1, max_size=60),
    per_second=st.sampled_from([0.5, 1, 2, 5, 20]),
    burst=st.integers(min_value=1, max_value=10),
)
def test_greedy_claims_never_pass_burst_plus_rate_in_a_window(gaps, per_second, burst) -> None:
    """Claims at arbitrary moments, each taking a token when there is one: in any window
    of one second at most burst + per_second of them succeed."""
    tokens, last, now, started = float(burst), T0, T0, []
    for gap in gaps:
        now += timedelta(seconds=gap)
        tokens, last = refilled(tokens, last, now, per_second, burst), now
        while whole(tokens) >= 1:
            tokens -= 1
            started.append(now)
    window = timedelta(seconds=1)
    for moment in started:
        assert sum(1 for s in started if moment <= s < moment + window) <= burst + per_second
