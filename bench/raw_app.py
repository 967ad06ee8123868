"""The Celery app of the raw-Celery baseline: same broker, its own queue, a result backend.

Raw chords need a result backend; the engine needs none, so only this app has one. The
worker arrangement is the engine's: one `celery worker --concurrency 2` (prefork), acks
late, prefetch 1.
"""

from __future__ import annotations

import os

from celery import Celery

BROKER_URL = os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/2")
RESULT_URL = os.environ.get("BENCH_RESULT_URL", "redis://127.0.0.1:6379/3")
#: Task events as the engine sends them in this run (bench/environment.py prepare).
EVENTS = os.environ.get("BENCH_CELERY_EVENTS", "0") == "1"
QUEUE = "bench_raw"

# Not the current app: in the bench runner the engine's app (config) must stay current,
# or the engine's shared tasks would be published through this one.
app = Celery(
    "bench_raw",
    broker=BROKER_URL,
    backend=RESULT_URL,
    include=["bench.raw_tasks"],
    set_as_current=False,
)
app.conf.update(
    task_serializer="json",
    accept_content=["json"],
    result_serializer="json",
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_default_queue=QUEUE,
    worker_hijack_root_logger=False,
    result_expires=3600,
    broker_connection_retry_on_startup=True,
    worker_send_task_events=EVENTS,
    task_send_sent_event=EVENTS,
)
