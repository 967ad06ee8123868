"""Fold the pending metric deltas into their totals, and read the totals.

A scrape first takes the deltas committed since the last one (each row once: taken with
SKIP LOCKED on PostgreSQL, so two web processes scraping at once split them; SQLite
serializes writers anyway), adds them to MetricSeries and deletes them, all in one
transaction; then reads MetricSeries. Its cost follows the work done since the previous
scrape and the number of series, never the size of the history.
"""

from __future__ import annotations

import bisect
import json
from collections import defaultdict
from datetime import datetime
from functools import reduce
from operator import or_
from typing import Any

from django.db import connection, transaction
from django.db.models import Q

from executions.definitions import definition_for
from executions.metrics.models import MetricDelta, MetricSeries
from executions.metrics.tally import GLOBAL, WORKFLOW
from executions.models import Attempt
from workflows.models import WorkflowDefinition

#: Upper bounds (seconds) of the duration and queue-wait histograms' buckets.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
           900.0, 3600.0)  # fmt: skip
HISTOGRAMS = ("task_duration_seconds", "task_queue_wait_seconds")
#: Deltas folded per transaction: a long backlog is taken in several short ones.
BATCH = 1000
#: Attempts looked up per query when reading durations.
ATTEMPT_CHUNK = 200

Key = tuple[str, str]  # (series name, canonical labels)


def labels_key(labels: dict[str, str]) -> str:
    return json.dumps(labels, sort_keys=True, separators=(",", ":"))


def catch_up() -> int:
    """Fold every delta committed so far into the totals; returns how many were folded."""
    folded = 0
    while True:
        with transaction.atomic():
            pending = MetricDelta.objects.order_by("pk")
            if connection.features.has_select_for_update_skip_locked:
                pending = pending.select_for_update(skip_locked=True)
            rows = list(pending.values_list("pk", "data")[:BATCH])
            if not rows:
                return folded
            add(totals_of([data for _, data in rows]))
            MetricDelta.objects.filter(pk__in=[pk for pk, _ in rows]).delete()
        folded += len(rows)
        if len(rows) < BATCH:
            return folded


def add(sums: dict[Key, float]) -> None:
    """Add to the totals, in a fixed order: two scrapes lock the rows in the same order."""
    if not sums:
        return
    table = MetricSeries._meta.db_table
    with connection.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {table} (name, labels, value) VALUES (%s, %s, %s) "
            f"ON CONFLICT (name, labels) DO UPDATE SET value = {table}.value + excluded.value",
            [(name, labels, value) for (name, labels), value in sorted(sums.items())],
        )


def totals_of(deltas: list[dict[str, Any]]) -> dict[Key, float]:
    """What the deltas add to each series, with their workflow and node type labels."""
    names = dict(
        WorkflowDefinition.objects.filter(pk__in={d.get("w") for d in deltas} - {None}).values_list(
            "pk", "name"
        )
    )
    sums: dict[Key, float] = defaultdict(float)
    finished: list[tuple[dict[str, str], str, int, str, datetime]] = []
    for delta in deltas:
        workflow = names.get(delta.get("w") or 0, "unknown")
        version = delta.get("v", 0)
        for name, scope, labels, value in delta["n"]:
            full = {**labels, **_scope_labels(scope, workflow, version)}
            sums[(name, labels_key(full))] += value
        for node_id, attempt, result, at in delta["a"]:
            where = _scope_labels(node_id, workflow, version)
            finished.append((where, node_id, attempt, delta["e"], datetime.fromisoformat(at)))
            sums[("task_attempts_finished", labels_key({**where, "result": result}))] += 1
    _observe_attempts(sums, finished)
    return sums


def _scope_labels(scope: str | None, workflow: str, version_id: int) -> dict[str, str]:
    if scope is GLOBAL:
        return {}
    if scope == WORKFLOW:
        return {"workflow": workflow}
    return {"workflow": workflow, "node_type": _node_type(version_id, scope)}


def _node_type(version_id: int, node_id: str) -> str:
    try:
        return definition_for(version_id).node_for(node_id).type
    except Exception:  # a version that no longer parses must not stop the metrics
        return "unknown"


def _observe_attempts(
    sums: dict[Key, float], finished: list[tuple[dict[str, str], str, int, str, datetime]]
) -> None:
    """Duration (claim to result) and queue wait (scheduled to claim) of each finished
    attempt, from its Attempt row: observed once, when its result is counted."""
    for start in range(0, len(finished), ATTEMPT_CHUNK):
        chunk = finished[start : start + ATTEMPT_CHUNK]
        wanted = reduce(or_, (Q(execution_id=e, node_id=n, attempt=a) for _, n, a, e, _ in chunk))
        rows = Attempt.objects.filter(wanted).values_list(
            "execution_id", "node_id", "attempt", "scheduled_at", "claimed_at"
        )
        times = {(str(e), n, a): (s, c) for e, n, a, s, c in rows}
        for labels, node_id, attempt, execution_id, at in chunk:
            scheduled, claimed = times.get((execution_id, node_id, attempt), (None, None))
            if claimed is None or scheduled is None:
                continue
            observe(sums, "task_duration_seconds", labels, (at - claimed).total_seconds())
            observe(sums, "task_queue_wait_seconds", labels, (claimed - scheduled).total_seconds())


def observe(sums: dict[Key, float], name: str, labels: dict[str, str], value: float) -> None:
    value = max(value, 0.0)
    index = bisect.bisect_left(BUCKETS, value)
    le = str(BUCKETS[index]) if index < len(BUCKETS) else "+Inf"
    sums[(f"{name}_bucket", labels_key({**labels, "le": le}))] += 1
    sums[(f"{name}_sum", labels_key(labels))] += value
    sums[(f"{name}_count", labels_key(labels))] += 1


def series() -> dict[str, list[tuple[dict[str, str], float]]]:
    """Every stored series, by name: [(labels, value), ...]."""
    found: dict[str, list[tuple[dict[str, str], float]]] = defaultdict(list)
    for name, labels, value in MetricSeries.objects.values_list("name", "labels", "value"):
        found[name].append((json.loads(labels), value))
    return found
