"""Prometheus metrics computed from the database at scrape time.

Every process (web, workers, beat) shares one truth, the database, so a scrape of any
web process sees the whole system; nothing is counted in memory, and a fresh registry
per scrape leaves no global state behind.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Count, Min, Sum
from django.utils import timezone
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from executions.engine.statuses import ExecutionStatus, TaskStatus, values
from executions.models import Attempt, AttemptStatus, Execution, Task, Timer
from schedules.models import Schedule


def _by_status(model: type[Execution] | type[Task], statuses: list[str]) -> dict[str, int]:
    """Counts per status, with 0 for the statuses no row has (absent series confuse alerts)."""
    counts = dict.fromkeys(statuses, 0)
    for row in model.objects.order_by().values("status").annotate(n=Count("pk")):
        counts[row["status"]] = row["n"]
    return counts


def _status_gauge(name: str, doc: str, counts: dict[str, int]) -> GaugeMetricFamily:
    gauge = GaugeMetricFamily(name, doc, labels=["status"])
    for status, count in counts.items():
        gauge.add_metric([status], count)
    return gauge


class WorkflowCollector(Collector):
    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        yield _status_gauge(
            "workflow_executions",
            "Executions by status.",
            _by_status(Execution, values(ExecutionStatus)),
        )
        yield _status_gauge(
            "workflow_tasks", "Tasks (nodes) by status.", _by_status(Task, values(TaskStatus))
        )
        yield GaugeMetricFamily(
            "workflow_attempts_running",
            "Attempts claimed by a worker and not finished.",
            value=Attempt.objects.filter(status=AttemptStatus.RUNNING).count(),
        )
        yield GaugeMetricFamily(
            "workflow_timers_pending",
            "Durable timers (delays, retry backoffs, scheduled starts) not fired yet.",
            value=Timer.objects.filter(fired_at__isnull=True).count(),
        )
        yield GaugeMetricFamily(
            "workflow_oldest_unclaimed_attempt_age_seconds",
            "Age of the oldest attempt scheduled but not claimed by a worker (0 if none): "
            "growth means workers are missing or saturated.",
            value=_oldest_unclaimed_age(),
        )
        # Events are numbered 1..last_seq per execution with no gap, so this sum is the
        # event count without scanning the (much larger) event table.
        total = Execution.objects.aggregate(n=Sum("last_seq"))["n"] or 0
        yield CounterMetricFamily("workflow_events", "Events appended to the log.", value=total)
        yield _schedules_gauge()


def _oldest_unclaimed_age() -> float:
    oldest = Attempt.objects.filter(status=AttemptStatus.SCHEDULED).aggregate(
        at=Min("scheduled_at")
    )["at"]
    if oldest is None:
        return 0.0
    return max((timezone.now() - oldest).total_seconds(), 0.0)


def _schedules_gauge() -> GaugeMetricFamily:
    gauge = GaugeMetricFamily(
        "workflow_schedules", "Schedules, enabled or not.", labels=["enabled"]
    )
    counts = {True: 0, False: 0}
    for row in Schedule.objects.order_by().values("enabled").annotate(n=Count("pk")):
        counts[row["enabled"]] = row["n"]
    for enabled, count in counts.items():
        gauge.add_metric([str(enabled).lower()], count)
    return gauge


def metrics_text() -> bytes:
    """The Prometheus text exposition of every metric above."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(WorkflowCollector())
    return generate_latest(registry)
