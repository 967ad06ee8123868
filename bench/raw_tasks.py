"""The raw-Celery baseline's one task: a no-op that stamps its start time into Redis."""

from __future__ import annotations

import os
import time

import redis
from celery import shared_task

_redis: redis.Redis | None = None


def stamps() -> redis.Redis:
    global _redis
    if _redis is None:
        _redis = redis.Redis.from_url(
            os.environ.get("BENCH_RESULT_URL", "redis://127.0.0.1:6379/3")
        )
    return _redis


@shared_task(acks_late=True, name="bench.raw_tasks.noop")
def noop(key: str | None = None, *_: object) -> None:
    """Does nothing; with a key, records when it started (for per-hop latency and the end)."""
    if key:
        stamps().rpush(key, repr(time.time()))
