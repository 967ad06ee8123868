"""Rate limits on the real engine (worker and beat processes, the database and the
broker): 50 attempts of a node limited to 5 a second, over 3 executions that share its
key, never start more than the burst plus 5 in any one second, read from the logs'
task_started stamps; the waiting ones are released by the sweeper as tokens return, and
every execution replays (`--verify`)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from executions.engine.events import EventType
from executions.models import Event, RateBucket
from tests.factories import start
from tests.integration.engine import Engine

pytestmark = pytest.mark.integration

RATE, BURST = 5, 5
WIDTHS = (17, 17, 16)


def limited(width: int) -> dict:
    rate = {"key": "{{ input.account }}", "per_second": RATE, "burst": BURST}
    node = {"type": "function", "function": "std.noop", "rate_limit": rate}
    return {"nodes": [{"id": f"n{i}", **node} for i in range(width)]}


def test_fifty_attempts_over_three_executions_keep_to_five_a_second(live: Engine) -> None:
    account = f"acct-{uuid.uuid4().hex[:8]}"
    executions = [start(limited(width), {"account": account}) for width in WIDTHS]
    for execution in executions:
        ended = live.wait(execution.pk, timeout=120)  # checks --verify too
        assert ended.status == "succeeded", ended.error
    stamps = sorted(
        Event.objects.filter(execution__in=executions, type=EventType.TASK_STARTED).values_list(
            "timestamp", flat=True
        )
    )
    assert len(stamps) == sum(WIDTHS) == 50
    window = timedelta(seconds=1)
    busiest = max(sum(1 for t in stamps if s <= t < s + window) for s in stamps)
    assert busiest <= BURST + RATE, f"{busiest} starts in one second"
    # The limit bit: after the burst, 45 more starts at 5 a second take 9 seconds at least.
    span = (stamps[-1] - stamps[0]).total_seconds()
    assert span >= (len(stamps) - BURST) / RATE - 0.01, span
    print(f"rate limit 5/s: 50 starts over {span:.2f} s, busiest second {busiest}")
    # Each wait is in its execution's log, once per attempt, before that attempt started.
    waits = Event.objects.filter(execution__in=executions, type=EventType.TASK_RATE_LIMITED)
    waited = list(waits.values_list("execution_id", "node_id"))
    assert waited, "no attempt waited: the limit never bit"
    assert len(waited) == len(set(waited))
    assert RateBucket.objects.filter(key=f"key:{account}").exists()
