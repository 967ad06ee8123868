"""What the purge tests count: every table's rows, and the rows that belong to executions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from uuid import UUID

from django.apps import apps
from django.db.models import Exists, OuterRef, Q

from executions.models import (
    Attempt,
    ConcurrencyKey,
    Event,
    Execution,
    PublishedEvent,
    RetryRequest,
    ScheduleFire,
    Task,
    Timer,
    TriggerRun,
)

#: Every table a purge may touch, with the rows of `ids` in it.
_OWNED = (Event, Task, Attempt, Timer, RetryRequest, ScheduleFire, TriggerRun)


def table_counts() -> Counter[str]:
    """Rows in every table of the engine's three apps."""
    counts: Counter[str] = Counter()
    for label in ("workflows", "executions", "nodes"):
        for model in apps.get_app_config(label).get_models():
            counts[model._meta.db_table] = model._default_manager.count()
    return counts


def owned_rows(ids: Iterable[UUID]) -> Counter[str]:
    """The rows that belong to these executions, by table: theirs, the published events
    that point at no other execution, and the concurrency keys no other execution uses."""
    ids = list(ids)
    owned: Counter[str] = Counter(
        {Execution._meta.db_table: Execution.objects.filter(pk__in=ids).count()}
    )
    for model in _OWNED:
        owned[model._meta.db_table] = model.objects.filter(execution_id__in=ids).count()
    elsewhere = TriggerRun.objects.filter(event=OuterRef("pk"), execution__isnull=False).exclude(
        execution_id__in=ids
    )
    only_theirs = PublishedEvent.objects.filter(runs__execution_id__in=ids).exclude(
        Exists(elsewhere)
    )
    owned[PublishedEvent._meta.db_table] = only_theirs.distinct().count()
    # Runs of those events that started nothing (error runs) go with them.
    owned[TriggerRun._meta.db_table] += TriggerRun.objects.filter(
        event__in=only_theirs, execution__isnull=True
    ).count()
    keys = set(
        Execution.objects.filter(pk__in=ids)
        .exclude(concurrency_key="")
        .values_list("workflow_id", "concurrency_key")
    )
    unused = [
        (workflow, key)
        for workflow, key in keys
        if not Execution.objects.filter(workflow_id=workflow, concurrency_key=key)
        .exclude(pk__in=ids)
        .exists()
    ]
    if unused:
        owned[ConcurrencyKey._meta.db_table] = ConcurrencyKey.objects.filter(
            _any_key(unused)
        ).count()
    return +owned


def _any_key(keys: list[tuple[int, str]]) -> Q:
    found = Q()
    for workflow, key in keys:
        found |= Q(workflow_id=workflow, key=key)
    return found
