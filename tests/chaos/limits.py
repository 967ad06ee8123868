"""Limits read back from the event logs: how many executions of one concurrency key, or
attempts of one pool, held a slot at the same instant, and in which order executions of
one key were let in. Pure: intervals and orders in, problems out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

Interval = tuple[datetime, datetime | None]


def max_overlap(intervals: Iterable[Interval]) -> tuple[int, datetime | None]:
    """The most intervals open at one instant, and the first instant it was reached.

    An interval is [start, end): at a tie the end comes first, since a slot is handed on
    only after its holder's ending committed (the next start is stamped after it). An
    open end (None) holds its slot to the end of the run.
    """
    points: list[tuple[datetime, int]] = []
    for start, end in intervals:
        points.append((start, 1))
        if end is not None:
            points.append((end, -1))
    points.sort(key=lambda p: (p[0], p[1]))
    held = peak = 0
    at = None
    for when, step in points:
        held += step
        if held > peak:
            peak, at = held, when
    return peak, at


def over_limit(groups: Mapping[str, Iterable[Interval]], limit: int, what: str) -> list[str]:
    """One problem per group whose intervals ever overlapped more than `limit` deep."""
    problems = []
    for group, intervals in groups.items():
        peak, at = max_overlap(intervals)
        if peak > limit:
            problems.append(f"{what} {group!r}: {peak} at once at {at} (limit {limit})")
    return problems


def out_of_order(queues: Mapping[str, Sequence[tuple[Any, datetime]]]) -> list[str]:
    """Per group, (created order key, admitted order key) pairs listed in creation order:
    one problem per group whose members were admitted in another order (FIFO broken)."""
    problems = []
    for group, members in queues.items():
        admitted = [a for _, a in members]
        if admitted != sorted(admitted):
            first = next(i for i in range(1, len(admitted)) if admitted[i] < admitted[i - 1])
            problems.append(
                f"key {group!r}: created #{first} was let in before #{first - 1} "
                f"({len(members)} executions)"
            )
    return problems
