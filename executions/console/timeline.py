"""A Gantt-style timeline from the event log: one row per node, one bar per phase of each
attempt. Pure: takes the timeline's events as plain tuples, returns bars in pixels.

Phases, all read from events (a node's first event of each kind per attempt counts):

- ``queued``: task_scheduled until task_started (a worker claimed it); a worker's
  attempt never claimed (in the broker, held for a pool slot) is queued until its result
  or ``now``;
- ``run``: task_started until the attempt's result, coloured by it (``succeeded``,
  ``failed``, ``timed_out``, ``cancelled``); no result yet: open until ``now``;
- ``wait``: scheduled and never started (approvals, signals, sub-workflows) until the
  result, or ``now``;
- ``timer``: a delay node's timer_started until its timer_fired;
- ``backoff``: task_retry_scheduled of attempt k until the timer_fired of attempt k+1
  (the retry's backoff timer).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

#: The event types the timeline reads (the glue selects only these from the log).
TYPES = (
    "task_scheduled",
    "task_started",
    "task_completed",
    "task_failed",
    "task_timed_out",
    "task_cancelled",
    "task_retry_scheduled",
    "timer_started",
    "timer_fired",
)
RESULTS = {
    "task_completed": "succeeded",
    "task_failed": "failed",
    "task_timed_out": "timed_out",
    "task_cancelled": "cancelled",
}

LABEL_WIDTH = 180
ROW_HEIGHT = 22
BAR_HEIGHT = 14
AXIS_HEIGHT = 22
MIN_BAR = 2


@dataclass(frozen=True)
class Mark:
    """One event as the timeline reads it."""

    node_id: str
    attempt: int | None
    type: str
    at: datetime


@dataclass(frozen=True)
class Span:
    node_id: str
    attempt: int
    #: queued, run, wait, timer or backoff.
    phase: str
    #: The attempt's outcome (succeeded, failed, ...) or "open" while it lasts.
    outcome: str
    start: datetime
    end: datetime | None


@dataclass(frozen=True)
class Bar:
    span: Span
    x: float
    y: int
    width: float
    height: int

    @property
    def css(self) -> str:
        return f"tl-{self.span.phase} tl-{self.span.outcome}"

    @property
    def title(self) -> str:
        s = self.span
        until = s.end.isoformat(sep=" ", timespec="milliseconds") if s.end else "now"
        took = f" ({_seconds((s.end or s.start) - s.start)})" if s.end else ""
        return (
            f"{s.node_id} attempt {s.attempt}: {s.phase} {s.outcome}, "
            f"{s.start.isoformat(sep=' ', timespec='milliseconds')} → {until}{took}"
        )


@dataclass(frozen=True)
class Row:
    node_id: str
    y: int
    bars: tuple[Bar, ...]


@dataclass(frozen=True)
class Tick:
    x: float
    label: str


@dataclass(frozen=True)
class Timeline:
    rows: tuple[Row, ...]
    ticks: tuple[Tick, ...]
    width: int
    height: int
    start: datetime | None
    end: datetime | None


def spans(marks: Iterable[Mark], queued: Collection[str] = ()) -> list[Span]:
    """The phases of every attempt, in the order their nodes first appear. `queued`: the
    nodes a worker runs, whose attempt waits for a worker (not an answer) until started."""
    first: dict[tuple[str, int, str], datetime] = {}
    order: dict[str, None] = {}
    for mark in marks:
        if mark.attempt is None:
            continue
        order.setdefault(mark.node_id, None)
        key = (mark.node_id, mark.attempt, mark.type)
        if key not in first or mark.at < first[key]:
            first[key] = mark.at
    attempts: dict[str, set[int]] = {node: set() for node in order}
    for node, attempt, _ in first:
        attempts[node].add(attempt)
    found: list[Span] = []
    for node in order:
        for attempt in sorted(attempts[node]):
            found.extend(_phases(node, attempt, first, node in queued))
    return found


def _phases(
    node: str, attempt: int, first: dict[tuple[str, int, str], datetime], queued: bool
) -> list[Span]:
    def at(kind: str, number: int = attempt) -> datetime | None:
        return first.get((node, number, kind))

    result = next(((RESULTS[t], at(t)) for t in RESULTS if at(t) is not None), None)
    outcome, ended = result if result else ("open", None)
    found: list[Span] = []
    scheduled, started = at("task_scheduled"), at("task_started")
    timer = at("timer_started")
    if timer is not None:  # a delay node's timer (a retry's timer_fired has no start)
        fired = at("timer_fired")
        found.append(Span(node, attempt, "timer", "succeeded" if fired else "open", timer, fired))
    if started is not None:
        if scheduled is not None and scheduled < started:
            found.append(Span(node, attempt, "queued", outcome, scheduled, started))
        found.append(Span(node, attempt, "run", outcome, started, ended))
    elif scheduled is not None:
        phase = "queued" if queued else "wait"
        found.append(Span(node, attempt, phase, outcome, scheduled, ended))
    retry = at("task_retry_scheduled")
    if retry is not None:
        fired = at("timer_fired", attempt + 1)
        found.append(Span(node, attempt, "backoff", "succeeded" if fired else "open", retry, fired))
    return found


def timeline(
    marks: Iterable[Mark],
    *,
    now: datetime,
    width: int = 900,
    rows: Sequence[str] = (),
    queued: Collection[str] = (),
) -> Timeline:
    """Bars placed on a shared time axis from the first event to the last end (or `now`
    for what is still open). `rows` fixes the row order (others follow, as first seen);
    `queued` as in spans()."""
    found = spans(marks, queued)
    names = list(dict.fromkeys([*rows, *(s.node_id for s in found)]))
    present = {s.node_id for s in found}
    names = [n for n in names if n in present]
    if not found:
        return Timeline((), (), width, AXIS_HEIGHT, None, None)
    start = min(s.start for s in found)
    end = max(max((s.end or now) for s in found), start)
    total = (end - start).total_seconds() or 1.0
    plot = width - LABEL_WIDTH - 8

    def x_of(moment: datetime) -> float:
        return LABEL_WIDTH + (moment - start).total_seconds() / total * plot

    by_node: dict[str, list[Bar]] = {n: [] for n in names}
    y_of = {n: AXIS_HEIGHT + i * ROW_HEIGHT for i, n in enumerate(names)}
    for span in found:
        x = x_of(span.start)
        w = max(x_of(span.end or now) - x, MIN_BAR)
        thin = span.phase in ("queued", "backoff")
        height = BAR_HEIGHT // 2 if thin else BAR_HEIGHT
        y = y_of[span.node_id] + (ROW_HEIGHT - height) // 2
        by_node[span.node_id].append(Bar(span, round(x, 1), y, round(w, 1), height))
    placed = tuple(Row(n, y_of[n], tuple(by_node[n])) for n in names)
    height = AXIS_HEIGHT + len(names) * ROW_HEIGHT + 4
    return Timeline(placed, ticks(start, end, LABEL_WIDTH, plot), width, height, start, end)


_STEPS = (
    0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30,
    60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 21600, 43200, 86400,
)  # fmt: skip


def ticks(
    start: datetime, end: datetime, left: float, plot: float, most: int = 8
) -> tuple[Tick, ...]:
    """Axis ticks at a round step (offsets from the start), at most `most` of them."""
    total = (end - start).total_seconds()
    step = next((s for s in _STEPS if total / s <= most), None)
    if step is None:
        step = 86400.0 * max(1, int(total / 86400 / most) + 1)
    found, offset = [], 0.0
    while offset <= total + 1e-9:
        x = left + (offset / total * plot if total else 0.0)
        found.append(Tick(round(x, 1), "+" + seconds_text(offset)))
        offset += step
    return tuple(found)


def _seconds(delta: timedelta) -> str:
    return seconds_text(delta.total_seconds())


def seconds_text(value: float) -> str:
    """A duration in the unit that suits it: 250ms, 1.5s, 2.5m, 3h."""
    if value >= 3600:
        return f"{value / 3600:.3g}h"
    if value >= 60:
        return f"{value / 60:.3g}m"
    if value >= 1 or value == 0:
        return f"{value:.3g}s"
    return f"{value * 1000:.3g}ms"
