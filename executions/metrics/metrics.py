"""Prometheus metrics, from the database: the same answer from every web process.

Counters, status gauges and histograms are totals the engine keeps incrementally: each
unit of work stages its deltas in the same transaction as its events (executions/metrics/tally.py)
and a scrape folds the new ones in (executions/metrics/ledger.py), so a scrape costs the work done
since the previous one plus the number of series, never a scan of the history. The few
gauges read directly use indexes bounded by the live work (running attempts, pending
timers). Nothing is counted in memory: prefork children, several workers and several web
processes all add to the same rows. A fresh registry per scrape keeps no global state.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from django.db.models import Count, Min
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from executions.engine.statuses import ExecutionStatus, TaskStatus, values
from executions.liveness import sweeper_status
from executions.metrics import ledger
from executions.models import Attempt, AttemptStatus, Timer
from executions.schedules.models import Schedule
from workflows import clock

Series = dict[str, list[tuple[dict[str, str], float]]]

#: (name as stored, help, label names) of the counters by workflow and node.
COUNTERS: tuple[tuple[str, str, list[str]], ...] = (
    ("workflow_events", "Events appended to the log.", []),
    ("workflows_started", "Executions started (workflow_started).", ["workflow"]),
    ("workflows_completed", "Executions that succeeded (workflow_completed).", ["workflow"]),
    ("workflows_failed", "Executions that failed (workflow_failed).", ["workflow"]),
    ("workflows_cancelled", "Executions cancelled (workflow_cancelled).", ["workflow"]),
    ("task_retry", "Retries scheduled after a failed or timed-out attempt.",
     ["workflow", "node_type"]),
    ("task_attempts_finished", "Attempts that ran and ended, by result "
     "(succeeded, failed, timed_out, cancelled).", ["workflow", "node_type", "result"]),
)  # fmt: skip
HISTOGRAM_HELP = {
    "task_duration_seconds": "Seconds from an attempt's claim by a worker to its result.",
    "task_queue_wait_seconds": "Seconds an attempt waited between being scheduled and "
    "claimed by a worker (observed when it ends).",
}


def _status_gauge(name: str, doc: str, statuses: list[str], found: Series) -> GaugeMetricFamily:
    """Counts per status, with 0 for the statuses no row has (absent series confuse alerts)."""
    counts = dict.fromkeys(statuses, 0.0)
    for labels, value in found.get(name, []):
        counts[labels.get("status", "")] = value
    gauge = GaugeMetricFamily(name, doc, labels=["status"])
    for status, count in counts.items():
        gauge.add_metric([status], count)
    return gauge


def _labelled(family: CounterMetricFamily | GaugeMetricFamily, names: list[str], found: Series):
    for labels, value in sorted(found.get(family.name, []), key=lambda s: sorted(s[0].items())):
        family.add_metric([labels.get(n, "") for n in names], value)
    return family


def _histogram(name: str, found: Series) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, HISTOGRAM_HELP[name], labels=["workflow", "node_type"])
    per_bucket: dict[tuple[str, str], dict[str, float]] = {}
    for labels, value in found.get(f"{name}_bucket", []):
        key = (labels.get("workflow", ""), labels.get("node_type", ""))
        per_bucket.setdefault(key, {})[labels["le"]] = value
    sums = {
        (lb.get("workflow", ""), lb.get("node_type", "")): v
        for lb, v in found.get(f"{name}_sum", [])
    }
    for key in sorted(per_bucket):
        counts, total, buckets = per_bucket[key], 0.0, []
        for le in [*(str(b) for b in ledger.BUCKETS), "+Inf"]:
            total += counts.get(le, 0.0)
            buckets.append((le, total))
        family.add_metric(list(key), buckets, sums.get(key, 0.0))
    return family


class WorkflowCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        ledger.catch_up()
        found = ledger.series()
        yield _status_gauge(
            "workflow_executions", "Executions by status.", values(ExecutionStatus), found
        )
        yield _status_gauge("workflow_tasks", "Tasks (nodes) by status.", values(TaskStatus), found)
        for name, doc, labels in COUNTERS:
            yield _labelled(CounterMetricFamily(name, doc, labels=labels), labels, found)
        yield _labelled(
            GaugeMetricFamily(
                "tasks_running",
                "Attempts started and not ended (a sub-workflow node's runs with its child).",
                labels=["workflow", "node_type"],
            ),
            ["workflow", "node_type"],
            found,
        )
        for name in ledger.HISTOGRAMS:
            yield _histogram(name, found)
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
        yield _schedules_gauge()
        yield GaugeMetricFamily(
            "workflow_sweeper_last_sweep_age_seconds",
            "Seconds since the sweeper last completed a sweep (+Inf if it never did): past "
            "a few sweep intervals, no lease times out and no timer fires (beat or the "
            "orchestrator workers are down).",
            value=_sweep_age(),
        )


def _oldest_unclaimed_age() -> float:
    oldest = Attempt.objects.filter(status=AttemptStatus.SCHEDULED).aggregate(
        at=Min("scheduled_at")
    )["at"]
    if oldest is None:
        return 0.0
    return max((clock.now() - oldest).total_seconds(), 0.0)


def _sweep_age() -> float:
    age = sweeper_status().age_seconds
    return math.inf if age is None else age


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
