"""Scenario `broker`: run_task messages the broker carries per attempt over a wide map
(the target: <= 2 on average over 5,000 items, the queue empty when the map ends).

Counted from the broker's side, not the engine's: every run_task message a publisher
sends is announced by a task-sent event (CELERY_TASK_SEND_SENT_EVENT), which a receiver
in this process collects; the messages of this execution are those whose argument is one
of its attempt ids (republishes, top-ups and duplicates all count). The `nodes` queue's
length is sampled while the map runs and read again the moment it ends.
"""

from __future__ import annotations

import ast
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from bench.base import BenchBase
from bench.definitions import make_version
from bench.stats import summary

#: Map items per variant (the DSL bounds max_parallel at WORKFLOW_MAP_MAX_PARALLEL, 1000).
SIZES = {"smoke": 300, "full": 5_000}
RUNS = {"smoke": 1, "full": 1}
MAX_PARALLEL = 1_000


@contextmanager
def task_sent_events() -> Iterator[list[dict[str, Any]]]:
    """The task-sent events the broker carries while the block runs."""
    from config.celery import app

    seen: list[dict[str, Any]] = []
    ready = threading.Event()
    with app.connection_for_read() as connection:
        receiver = app.events.Receiver(connection, handlers={"task-sent": seen.append})
        receiver.on_consume_ready = lambda *args, **kwargs: ready.set()
        thread = threading.Thread(
            target=lambda: receiver.capture(limit=None, timeout=None, wakeup=False), daemon=True
        )
        thread.start()
        if not ready.wait(30):
            raise TimeoutError("the task event receiver never started")
        try:
            yield seen
        finally:
            time.sleep(1.0)  # the last events travel through the broker too
            receiver.should_stop = True
            thread.join(timeout=10)


def messages_for(seen: list[dict[str, Any]], attempt_ids: set[int]) -> int:
    count = 0
    for event in seen:
        if not str(event.get("name", "")).endswith("run_task"):
            continue
        args = ast.literal_eval(event.get("args") or "()")
        count += bool(args) and args[0] in attempt_ids
    return count


def queue_length(client: Any, queue: str = "nodes") -> int:
    """Messages waiting in a queue on Redis: one list per message priority (`nodes`,
    `nodes<sep><level>`) when priorities are in use."""
    keys = [k for k in client.scan_iter(match=f"{queue}*") if client.type(k) == b"list"]
    return sum(client.llen(k) for k in keys)


class BrokerScenarios(BenchBase):
    """Scenario h: broker messages per attempt."""

    #: Scenario name -> method, collected by bench.scenarios.SCENARIOS.
    scenarios: ClassVar[dict[str, str]] = {"broker": "broker_messages"}

    def broker_messages(self) -> None:
        import redis
        from django.conf import settings

        from executions.engine.statuses import EXECUTION_TERMINAL
        from executions.models import Attempt, Execution
        from workflows.conf import engine_settings

        if not settings.CELERY_TASK_SEND_SENT_EVENT:
            # Counted from task-sent events: without them every count is 0, a false pass.
            raise RuntimeError("broker messages are counted from task-sent events: run it "
                               "with --celery-events (./dev bench full --only broker "
                               "--celery-events)")  # fmt: skip
        width = SIZES[self.v.name]
        client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
        definition = {
            "nodes": [
                {
                    "id": "m",
                    "type": "map",
                    "items": "input.xs",
                    "max_parallel": min(width, MAX_PARALLEL),
                    "node": {"type": "function", "function": "std.noop"},
                }
            ]
        }
        version = make_version(f"broker-map-{width}", definition)
        per_attempt, at_end, peaks, seconds = [], [], [], []
        for _ in range(RUNS[self.v.name]):
            from executions.services.start import execution_start

            with task_sent_events() as seen:
                t0 = time.perf_counter()
                execution, _ = execution_start(version=version, input={"xs": list(range(width))})
                peak = 0
                while Execution.objects.values_list("status", flat=True).get(
                    pk=execution.pk
                ) not in (EXECUTION_TERMINAL):
                    peak = max(peak, queue_length(client))
                    self.procs.check()
                    time.sleep(0.2)
                at_end.append(queue_length(client))
                seconds.append(time.perf_counter() - t0)
                peaks.append(peak)
            status = Execution.objects.values_list("status", flat=True).get(pk=execution.pk)
            if status != "succeeded":
                raise RuntimeError(f"the {width}-item map ended {status}")
            ids = set(Attempt.objects.filter(execution=execution).values_list("pk", flat=True))
            per_attempt.append(messages_for(seen, ids) / len(ids))
        self.figures["broker_messages_per_attempt"] = summary(per_attempt, "messages")
        self.figures["broker_queue_at_end"] = summary([float(n) for n in at_end], "messages")
        self.figures["broker_queue_peak"] = summary([float(n) for n in peaks], "messages")
        self.figures["broker_map_seconds"] = summary(seconds, "s")
        self.notes["broker_map_items"] = width
        self.notes["broker_in_flight_cap"] = engine_settings.MAX_IN_FLIGHT_PER_EXECUTION
