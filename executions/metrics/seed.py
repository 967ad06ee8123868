"""The metrics' totals computed from the tables in one pass: the starting point when the
metrics tables are created on a database that already has history, and
`python manage.py metrics_rebuild` after anything that rewrote projections by hand
(`verify_logs --rebuild`). A full scan, so never at scrape time.

Counters are counted from the event log (exact); the histograms start empty (the
durations of past attempts are not kept).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from django.db.models import Count, OuterRef, Subquery, Sum

from executions.metrics.ledger import Key, labels_key
from executions.metrics.tally import WORKFLOW_COUNTERS

GetModel = Callable[[str, str], Any]


def totals(get_model: GetModel) -> dict[Key, float]:
    """Every series' value as the tables say now (models from `get_model(app, name)`, so a
    migration can pass its historical ones)."""
    execution = get_model("executions", "Execution")
    task = get_model("executions", "Task")
    event = get_model("executions", "Event")
    attempt = get_model("executions", "Attempt")
    sums: dict[Key, float] = defaultdict(float)
    # Executions with no event yet (a start_at still ahead), and their tasks, are counted
    # when they start.
    started = execution.objects.filter(last_seq__gt=0).order_by()
    for row in started.values("status").annotate(n=Count("pk")):
        sums[("workflow_executions", labels_key({"status": row["status"]}))] += row["n"]
    events = started.aggregate(n=Sum("last_seq"))["n"] or 0
    if events:
        sums[("workflow_events", labels_key({}))] += events
    tasks = task.objects.filter(execution__last_seq__gt=0).order_by()
    for row in tasks.values("status").annotate(n=Count("pk")):
        sums[("workflow_tasks", labels_key({"status": row["status"]}))] += row["n"]
    ended = event.objects.filter(type__in=list(WORKFLOW_COUNTERS)).order_by()
    for row in ended.values("type", "execution__workflow__name").annotate(n=Count("pk")):
        labels = labels_key({"workflow": row["execution__workflow__name"]})
        sums[(WORKFLOW_COUNTERS[row["type"]], labels)] += row["n"]
    retried = event.objects.filter(type="task_retry_scheduled")
    _by_node(sums, "task_retry", retried, task)
    _by_node(sums, "tasks_running", attempt.objects.filter(status="running"), task)
    return sums


def _by_node(sums: dict[Key, float], name: str, rows: Any, task: Any) -> None:
    """Count `rows` (with execution and node_id) by workflow and their node's type."""
    node_type = task.objects.filter(
        execution=OuterRef("execution"), node_id=OuterRef("node_id")
    ).values("type")[:1]
    grouped = rows.order_by().annotate(node_type=Subquery(node_type))
    for row in grouped.values("execution__workflow__name", "node_type").annotate(n=Count("pk")):
        where = {"workflow": row["execution__workflow__name"], "node_type": row["node_type"]}
        sums[(name, labels_key(where))] += row["n"]


def rebuild(get_model: GetModel) -> int:
    """Replace the totals and drop the pending deltas (the tables already hold what they
    say). Run while the engine is quiet: a unit committing meanwhile may be counted twice
    or not at all. Returns the number of series written."""
    delta = get_model("executions", "MetricDelta")
    series = get_model("executions", "MetricSeries")
    values = totals(get_model)
    delta.objects.all().delete()
    series.objects.all().delete()
    series.objects.bulk_create(
        series(name=name, labels=labels, value=value) for (name, labels), value in values.items()
    )
    return len(values)


#: Series a recount cannot know: the durations and outcomes of past attempts are not kept.
NOT_RECOUNTED = ("task_duration_seconds", "task_queue_wait_seconds", "task_attempts_finished")


def drift(get_model: GetModel) -> list[str]:
    """Where the totals /metrics serves differ from a recount of the tables (empty: they
    agree). After a chaos run, say; the engine must be quiet meanwhile."""
    from executions.metrics import ledger

    ledger.catch_up()
    kept = {
        (name, ledger.labels_key(labels)): value
        for name, found in ledger.series().items()
        for labels, value in found
    }
    counted = totals(get_model)
    keys = {key for key in kept.keys() | counted.keys() if not key[0].startswith(NOT_RECOUNTED)}
    return [
        f"{name}{labels}: kept {kept.get((name, labels), 0):g}, "
        f"recounted {counted.get((name, labels), 0):g}"
        for name, labels in sorted(keys)
        if kept.get((name, labels), 0) != counted.get((name, labels), 0)
    ]
