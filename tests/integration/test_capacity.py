"""Pools and the in-flight cap on the real engine: worker and beat processes, PostgreSQL
(or SQLite) and the broker. Every bound is read back from the event logs and from the
broker's own task events, never from the engine's own bookkeeping.

- a pool's slots are never exceeded across executions: the [task_started, result]
  intervals of its attempts, from the logs, never overlap more than `slots`;
- raising a pool's slots releases the nodes waiting for it;
- a slot held by a worker killed with -9 comes back (lease expiry, the sweeper's
  timeout) and the next execution runs;
- a wide map spends few broker messages per attempt (counted as the task-sent events
  of run_task messages naming its attempts), and none is left queued when it ends.
"""

from __future__ import annotations

import ast
import json
import os
import uuid
from datetime import datetime
from typing import Any

import pytest
from django.conf import settings

from executions.engine.events import RESULT_TYPES
from executions.models import Attempt, AttemptStatus, Event, Execution
from executions.services.pools import pool_create, pool_update
from executions.services.why import why_node
from tests.factories import start
from tests.integration.engine import Engine
from tests.waiting import eventually
from workflows.conf import engine_settings
from workflows.models import Pool

pytestmark = pytest.mark.integration


def a_pool(slots: int) -> str:
    name = f"pool-{uuid.uuid4().hex[:10]}"
    pool_create(name=name, slots=slots)
    return name


def sleepers(pool: str, count: int, seconds: float, **node: Any) -> dict[str, Any]:
    return {
        "nodes": [
            {
                "id": f"s{i}",
                "type": "function",
                "function": "std.sleep",
                "input": {"seconds": seconds},
                "pool": pool,
                **node,
            }
            for i in range(count)
        ]
    }


def intervals(executions: list[Execution]) -> list[tuple[datetime, datetime]]:
    """[task_started, its result] of every attempt, from the logs alone."""
    spans: dict[tuple[str, str, int], list[datetime]] = {}
    rows = Event.objects.filter(execution__in=executions).order_by("execution_id", "seq")
    for row in rows:
        key = (str(row.execution_id), row.node_id or "", row.attempt or 0)
        if row.type == "task_started":
            spans[key] = [row.timestamp]
        elif row.type in RESULT_TYPES and key in spans:
            spans[key].append(row.timestamp)
    assert all(len(span) == 2 for span in spans.values()), spans
    return [(span[0], span[1]) for span in spans.values()]


def most_at_once(spans: list[tuple[datetime, datetime]]) -> int:
    """The largest number of intervals open at one instant (a result closes its interval
    before a start at the very same instant opens the next)."""
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    open_now = peak = 0
    for _, step in edges:
        open_now += step
        peak = max(peak, open_now)
    return peak


def test_a_pool_of_one_runs_one_attempt_at_a_time_across_executions(live: Engine) -> None:
    pool = a_pool(1)
    started = [start(sleepers(pool, 2, 0.3)) for _ in range(3)]
    # While they run, the ones waiting say why.
    waiting = eventually(
        lambda: Attempt.objects.filter(
            pool_id=pool, status=AttemptStatus.SCHEDULED, published_at__isnull=True
        ).first(),
        30,
        "no attempt was held behind the pool",
    )
    reasons = why_node(waiting.execution, waiting.node_id)["reasons"]
    assert reasons[0]["code"] in ("pool_full", "queued"), reasons  # it may just have left
    done = [live.wait(e.pk, timeout=90) for e in started]
    assert [e.status for e in done] == ["succeeded"] * 3
    spans = intervals(done)
    assert len(spans) == 6
    assert most_at_once(spans) == 1


def test_raising_the_slots_from_0_to_2_releases_the_waiting_nodes(live: Engine) -> None:
    pool = a_pool(0)
    execution = start(sleepers(pool, 4, 0.5))

    def held() -> int:
        return Attempt.objects.filter(execution=execution, published_at__isnull=True).count()

    eventually(lambda: held() == 4, 30, "the four attempts were not all held")
    # The sweeper's backstop dispatches held attempts: with 0 slots, a whole sweep run
    # after the hold publishes none of them, so none can start.
    live.swept()
    assert held() == 4
    assert not Event.objects.filter(execution=execution, type="task_started").exists()
    assert why_node(execution, "s0")["reasons"][0]["code"] == "pool_full"
    pool_update(pool=Pool.objects.get(name=pool), slots=2)
    done = live.wait(execution.pk, timeout=60)
    assert done.status == "succeeded"
    spans = intervals([done])
    assert len(spans) == 4
    assert most_at_once(spans) <= 2


def test_a_slot_held_by_a_killed_worker_comes_back(live: Engine) -> None:
    live.start_worker()
    pool = a_pool(1)
    once = {"max_attempts": 1}
    holder = start(sleepers(pool, 1, 30, heartbeat_timeout_seconds=2, retry_policy=once))
    running = eventually(
        lambda: Attempt.objects.filter(execution=holder, status=AttemptStatus.RUNNING).first(),
        30,
        "the holder never took the slot",
    )
    waiter = start(
        {"nodes": [{"id": "n", "type": "function", "function": "std.noop", "pool": pool}]}
    )
    eventually(
        lambda: Attempt.objects.filter(
            execution=waiter, status=AttemptStatus.SCHEDULED, published_at__isnull=True
        ).exists(),
        30,
        "the waiter's attempt was never held behind the full pool",
    )
    assert why_node(waiter, "n")["reasons"][0]["code"] == "pool_full"
    pid = int(running.worker_id.split(":")[1])
    (victim,) = [w for w in live.workers if os.getpgid(pid) == w.pid]
    live.kill_worker(victim)
    done = live.wait(waiter.pk, timeout=90)
    assert done.status == "succeeded"
    dead = live.wait(holder.pk, timeout=90)
    assert dead.status == "failed"  # one attempt, timed out by the sweeper
    assert Event.objects.filter(execution=dead, type="task_timed_out").count() == 1
    assert most_at_once(intervals([dead, done])) == 1


def broker_client():
    import redis

    return redis.Redis.from_url(settings.CELERY_BROKER_URL)


def queued_for(attempt_ids: set[int]) -> int:
    """Messages still in the `nodes` queue for these attempts (Redis broker: the queue is
    one list per message priority, `nodes` and `nodes<sep><level>`)."""
    client, left = broker_client(), 0
    lists = [k for k in client.scan_iter(match="nodes*") if client.type(k) == b"list"]
    for raw in (m for key in lists for m in client.lrange(key, 0, -1)):
        message = json.loads(raw)
        argsrepr = message.get("headers", {}).get("argsrepr") or "()"
        args = ast.literal_eval(argsrepr)
        left += bool(args) and args[0] in attempt_ids
    return left


def run_task_ids(seen: list[dict[str, Any]], kind: str, attempt_ids: set[int]) -> list[str]:
    """The ids of run_task messages for these attempts that events of `kind` name:
    "task-sent" as the publishers sent one with each message (republishes and duplicates
    included), "task-received" as a worker took one (named by the message's shadow,
    attempt_name's "wf:...", when it has one)."""
    found = []
    for event in seen:
        name = event.get("name") or ""
        if event["type"] != kind or not (name.endswith("run_task") or name.startswith("wf:")):
            continue
        args = ast.literal_eval(event.get("args") or "()")
        if args and args[0] in attempt_ids:
            found.append(event["uuid"])
    return found


@pytest.mark.skipif(
    not settings.CELERY_BROKER_URL.startswith("redis"), reason="reads the Redis queue"
)
def test_a_wide_map_spends_few_messages_per_attempt_and_leaves_none_queued(
    live: Engine, task_events
) -> None:
    width = 400
    execution = start(
        {
            "nodes": [
                {
                    "id": "m",
                    "type": "map",
                    "items": "input.xs",
                    "max_parallel": width,
                    "node": {"type": "function", "function": "std.noop"},
                }
            ]
        },
        input={"xs": list(range(width))},
    )
    peak_unclaimed = 0

    def ended() -> bool:
        """Sampling the unclaimed attempts until then."""
        nonlocal peak_unclaimed
        unclaimed = Attempt.objects.filter(
            execution=execution, status=AttemptStatus.SCHEDULED, published_at__isnull=False
        ).count()
        peak_unclaimed = max(peak_unclaimed, unclaimed)
        return Execution.objects.get(pk=execution.pk).status in ("succeeded", "failed")

    eventually(ended, 120, "the map never ended")
    ids = set(Attempt.objects.filter(execution=execution).values_list("pk", flat=True))
    left = queued_for(ids)
    done = live.wait(execution.pk, timeout=5)
    assert done.status == "succeeded"
    assert len(ids) == width
    assert left == 0, f"{left} run_task messages still queued when the execution ended"
    # The in-flight cap: never more of its attempts in the broker unclaimed.
    assert peak_unclaimed <= engine_settings.MAX_IN_FLIGHT_PER_EXECUTION

    def sent_with_every_taken() -> list[str]:
        """The task-sent events, once one has come in for every message a worker took:
        events travel through the broker too, each publisher's on its own connection."""
        seen = list(task_events)
        sent = run_task_ids(seen, "task-sent", ids)
        return sent if set(sent) >= set(run_task_ids(seen, "task-received", ids)) else []

    sent = len(eventually(sent_with_every_taken, 30, "no task-sent event for a message taken"))
    print(f"\nmap of {width}: {sent} run_task messages, {sent / width:.3f} per attempt")
    assert 0 < sent <= 2 * width
