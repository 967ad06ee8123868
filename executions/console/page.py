"""What the execution page shows, read with a fixed number of queries whatever the length
of the history: the DAG (map items folded into their node by one GROUP BY), the last
attempts of each node, the timeline's events of those attempts, and one keyset page of
the log. Nothing here reads the whole log.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Count, Q, QuerySet, Value
from django.db.models.functions import Left, Length, StrIndex
from django.http import Http404
from django.utils.safestring import SafeString, mark_safe

from executions.console.layout import Box, Layout, layout
from executions.console.pretty import pretty
from executions.console.timeline import TYPES, Mark, Timeline, timeline
from executions.definitions import definition_for
from executions.engine.statuses import EXECUTION_TERMINAL, TaskStatus
from executions.models import Attempt, Event, Execution, Task
from executions.services.why import why_execution
from nodes.executors.function import transactional
from workflows import clock
from workflows.dsl import Definition
from workflows.kinds import get_kind

#: Attempts of one node the page and the timeline show (the latest ones).
ATTEMPTS_SHOWN = 25
#: Events per page of the log.
EVENTS_PER_PAGE = 50
#: Parked items of one map the page lists with their own buttons (the confirmation page
#: of "Retry/Fail parked node" offers every one).
PARKED_ITEMS_SHOWN = 10
_ITEM = "["
_SETTLED = frozenset({"succeeded", "failed", "skipped", "cancelled"})
#: Left to right in a map's item bar: done, then going, then not yet.
_ITEM_ORDER = (
    "succeeded", "failed", "cancelled", "skipped", "running", "retrying", "parked", "waiting",
    "scheduled", "pending",
)  # fmt: skip


def shown(value: Any) -> SafeString:
    """A payload as HTML: pretty() escapes every character of the value itself."""
    return mark_safe(pretty(value))


@dataclass
class NodeView:
    node_id: str
    type: str
    status: str
    box: Box | None = None
    attempts: int = 0
    retry_count: int = 0
    started_at: datetime | None = None
    ended_at: datetime | None = None
    next_retry_at: datetime | None = None
    error: str = ""
    output: str = ""
    has_output: bool = False
    #: A map's items by status.
    items: dict[str, int] = field(default_factory=dict)
    #: A sub-workflow node's (latest) child execution.
    child: tuple[str, str] | None = None
    attempt_rows: list[dict[str, Any]] = field(default_factory=list)
    #: Why it is not running (the operate lane's why service), when known.
    reasons: list[dict[str, Any]] = field(default_factory=list)
    #: Its function runs in the transaction that records its result.
    transactional: bool = False
    #: A map's parked items (the first PARKED_ITEMS_SHOWN, by index): each has its own
    #: retry and fail buttons, as a parked node has, since an item has no row of its own.
    parked_items: list[str] = field(default_factory=list)

    @property
    def parked_items_more(self) -> int:
        return self.items.get(TaskStatus.PARKED, 0) - len(self.parked_items)

    @property
    def items_total(self) -> int:
        return sum(self.items.values())

    @property
    def items_summary(self) -> str:
        return ", ".join(f"{n} {status}" for status, n in sorted(self.items.items()))

    @property
    def items_done(self) -> int:
        return sum(n for status, n in self.items.items() if status in _SETTLED)

    @property
    def item_segments(self) -> list[tuple[str, float, float]]:
        """(status, x, width) of a stacked bar of the items across the box's width."""
        total, x, found = self.items_total, 0.0, []
        width = self.box.width if self.box else 0
        for status in _ITEM_ORDER:
            count = self.items.get(status, 0)
            if count and total:
                part = count / total * width
                found.append((status, round(x, 1), round(part, 1)))
                x += part
        return found


@dataclass
class Page:
    execution: Execution
    definition: Definition
    picture: Layout
    nodes: list[NodeView]
    extra_tasks: list[NodeView]
    timeline: Timeline
    events: list[dict[str, Any]]
    newer_than: int | None
    older_than: int | None

    @property
    def terminal(self) -> bool:
        return self.execution.status in EXECUTION_TERMINAL


def node_views(
    execution: Execution, definition: Definition, picture: Layout
) -> tuple[list[NodeView], list[NodeView]]:
    """The definition's nodes (with their boxes) and the other tasks (compensations)."""
    boxes = {box.node_id: box for box in picture.boxes}
    rows = Task.objects.filter(execution=execution).exclude(node_id__contains=_ITEM)
    views = {t.node_id: _view(t) for t in rows.order_by("id")}
    for node in definition.nodes:
        view = views.setdefault(node.id, NodeView(node.id, node.type, TaskStatus.PENDING))
        view.box = boxes[node.id]
        view.transactional = transactional(node)
    for map_id, status, count in item_counts(execution):
        if map_id in views:
            views[map_id].items[status] = count
    for item in parked_items(
        execution, [v for v in views.values() if v.items.get(TaskStatus.PARKED)]
    ):
        views[item.partition(_ITEM)[0]].parked_items.append(item)
    for node_id, child_id, status in children(execution):
        if node_id in views:
            views[node_id].child = (child_id, status)
    for row in latest_attempts(execution, views.values()):
        views[row["node_id"]].attempt_rows.append(row)
    if execution.status not in EXECUTION_TERMINAL:
        for why in why_execution(execution):
            if why["node_id"] in views:
                views[why["node_id"]].reasons = why["reasons"]
    ordered = [views[n.id] for n in definition.nodes]
    known = set(definition.by_id)
    return ordered, [v for v in views.values() if v.node_id not in known]


def _view(task: Task) -> NodeView:
    return NodeView(
        task.node_id,
        task.type,
        task.status,
        attempts=task.attempts,
        retry_count=task.retry_count,
        started_at=task.started_at,
        ended_at=task.ended_at,
        next_retry_at=task.next_retry_at,
        error=shown(task.error) if task.error else "",
        output=shown(task.output),
        has_output=task.output is not None,
    )


def item_counts(execution: Execution) -> Iterable[tuple[str, str, int]]:
    """(map id, status, how many items) in one GROUP BY, however many items."""
    items = Task.objects.filter(execution=execution, node_id__contains=_ITEM)
    map_id = Left("node_id", StrIndex("node_id", Value(_ITEM)) - 1)
    grouped = items.annotate(map_id=map_id).values("map_id", "status").annotate(n=Count("id"))
    return grouped.values_list("map_id", "status", "n").order_by()


def parked_items(execution: Execution, maps: list[NodeView]) -> list[str]:
    """The first PARKED_ITEMS_SHOWN parked items of each of these maps (those whose item
    counts hold parked ones), in index order: one query per such map, none without."""
    found: list[str] = []
    for view in maps:
        items = Task.objects.filter(
            execution=execution,
            node_id__startswith=f"{view.node_id}{_ITEM}",
            status=TaskStatus.PARKED,
        )
        # `map[9]` before `map[10]`: by length first, the index's digits then compare.
        ordered = items.order_by(Length("node_id"), "node_id")
        found += ordered.values_list("node_id", flat=True)[:PARKED_ITEMS_SHOWN]
    return found


def children(execution: Execution) -> Iterable[tuple[str, str, str]]:
    """(node id, child execution id, its status) of each sub-workflow node's latest start."""
    rows = Execution.objects.filter(parent_execution=execution).exclude(
        parent_node_id__contains=_ITEM
    )
    found = rows.order_by("parent_node_id", "parent_attempt").values_list(
        "parent_node_id", "id", "status"
    )
    return [(node, str(child), status) for node, child, status in found]


def _window(views: Iterable[NodeView]) -> Q:
    """Rows of the latest ATTEMPTS_SHOWN attempts of each node: a node retried 20,000
    times contributes 25 attempts, not 20,000."""
    few, windows = [], Q()
    for view in views:
        if view.attempts > ATTEMPTS_SHOWN:
            windows |= Q(node_id=view.node_id, attempt__gt=view.attempts - ATTEMPTS_SHOWN)
        else:
            few.append(view.node_id)
    return Q(node_id__in=few) | windows


def latest_attempts(execution: Execution, views: Iterable[NodeView]) -> list[dict[str, Any]]:
    rows = Attempt.objects.filter(_window(views), execution=execution).order_by(
        "node_id", "attempt"
    )
    return [
        dict(row)
        for row in rows.values(
            "node_id",
            "attempt",
            "status",
            "worker_id",
            "scheduled_at",
            "claimed_at",
            "finished_at",
        )
    ]


def timeline_of(execution: Execution, views: list[NodeView], *, width: int = 960) -> Timeline:
    events = Event.objects.filter(_window(views), execution=execution, type__in=TYPES)
    marks = (
        Mark(node, attempt, kind, at)
        for node, attempt, kind, at in events.values_list("node_id", "attempt", "type", "timestamp")
    )
    end = execution.ended_at if execution.status in EXECUTION_TERMINAL else None
    on_worker = {v.node_id for v in views if getattr(get_kind(v.type), "runs_on_worker", False)}
    return timeline(
        marks,
        now=end or clock.now(),
        width=width,
        rows=[v.node_id for v in views],
        queued=on_worker,
    )


def event_page(
    execution: Execution, *, before: int | None
) -> tuple[list[dict[str, Any]], int | None, int | None]:
    """One page of the log, newest first, by keyset on seq (the (execution, seq) index):
    the rows, the `before` of the newer page (None: this is the newest; 0: the newer page
    is the newest) and of the older page (None: this is the oldest)."""
    top = execution.last_seq + 1 if before is None else max(1, min(before, execution.last_seq + 1))
    rows = list(
        Event.objects.filter(execution=execution, seq__lt=top, seq__gte=top - EVENTS_PER_PAGE)
        .order_by("-seq")
        .values("seq", "type", "node_id", "attempt", "source", "timestamp", "data")
    )
    for row in rows:
        row["pretty"] = shown(row.pop("data"))
    newer = top + EVENTS_PER_PAGE if top <= execution.last_seq else None
    if newer is not None and newer > execution.last_seq:
        newer = 0  # the newest page: no `before`
    older = rows[-1]["seq"] if rows and rows[-1]["seq"] > 1 else None
    return rows, newer, older


def execution_or_404(object_id: str, queryset: QuerySet[Execution] | None = None) -> Execution:
    """The execution of an admin URL; a malformed id is a 404 like an unknown one."""
    try:
        return (queryset if queryset is not None else Execution.objects.all()).get(
            pk=uuid.UUID(object_id)
        )
    except (ValueError, Execution.DoesNotExist):
        raise Http404(f"no execution {object_id!r}") from None


def execution_page(execution: Execution, *, before: int | None = None, log: bool = True) -> Page:
    definition = definition_for(execution.version_id)
    picture = layout([(n.id, n.depends_on) for n in definition.nodes])
    nodes, extra = node_views(execution, definition, picture)
    events, newer, older = event_page(execution, before=before) if log else ([], None, None)
    return Page(
        execution=execution,
        definition=definition,
        picture=picture,
        nodes=nodes,
        extra_tasks=extra,
        timeline=timeline_of(execution, [*nodes, *extra]),
        events=events,
        newer_than=newer,
        older_than=older,
    )


def status_counts(nodes: Iterable[NodeView]) -> Counter[str]:
    return Counter(n.status for n in nodes)
