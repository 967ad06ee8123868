"""Which executions a purge may take: whole trees of ended executions, oldest first.

A tree is a top-level execution (no parent) with every execution it started, their
children included. It goes only when every member has ended: a child whose parent still
runs is the parent's to wait for, and a parent that ended with a child still running (a
child left to finish) waits for it. Trees are judged by their root: its workflow, version,
status and end time; the children go with it whatever theirs.

Reads only: the batch (executions/services/purge_batch.py) checks again under its locks.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

from django.db.models import Q, QuerySet, Sum

from executions.engine.statuses import EXECUTION_TERMINAL
from executions.models import Execution

ENDED = sorted(str(status) for status in EXECUTION_TERMINAL)


@dataclass(frozen=True)
class Criteria:
    """What to purge: roots ended before `cutoff`, and of these only."""

    cutoff: datetime
    workflow_id: int | None = None
    status: str | None = None
    #: Only roots of these versions (a definition's own retention_days).
    versions: frozenset[int] | None = None
    #: Never roots of these versions (they keep their own retention_days).
    except_versions: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Tree:
    root: UUID
    ended_at: datetime
    #: The root first, then its descendants level by level.
    members: tuple[UUID, ...]
    #: The events of every member (their last seqs).
    events: int


@dataclass
class Page:
    trees: list[Tree] = field(default_factory=list)
    #: Roots left for now: a member of their tree has not ended.
    unfinished: int = 0


def roots(criteria: Criteria) -> QuerySet:
    """The roots the criteria select (executions/models.py execution_ended_root_idx)."""
    rows = Execution.objects.filter(
        parent_execution__isnull=True,
        status__in=[criteria.status] if criteria.status else ENDED,
        ended_at__lt=criteria.cutoff,
    )
    if criteria.workflow_id is not None:
        rows = rows.filter(workflow_id=criteria.workflow_id)
    if criteria.versions is not None:
        rows = rows.filter(version_id__in=criteria.versions)
    if criteria.except_versions:
        rows = rows.exclude(version_id__in=criteria.except_versions)
    return rows


def pages(criteria: Criteria, size: int) -> Iterator[Page]:
    """The selected trees, `size` roots a page, oldest end first. A page is read when the
    one before it has been handled, past the last root it held: purged roots are gone,
    and roots left behind are not read again in this run."""
    after: tuple[datetime, UUID] | None = None
    while True:
        rows = roots(criteria).order_by("ended_at", "id")
        if after is not None:
            moment, last = after
            rows = rows.filter(Q(ended_at__gt=moment) | Q(ended_at=moment, id__gt=last))
        found = list(rows.values_list("id", "ended_at")[:size])
        if not found:
            return
        after = found[-1][1], found[-1][0]
        yield trees_of(found)
        if len(found) < size:
            return


def trees_of(found: list[tuple[UUID, datetime]]) -> Page:
    """The trees of these roots, each with its members, unless one of them has not ended."""
    parent_of: dict[UUID, UUID] = {}
    ended: dict[UUID, bool] = {}
    seqs: dict[UUID, int] = {}
    level = [root for root, _ in found]
    for root, status, last_seq in Execution.objects.filter(pk__in=level).values_list(
        "pk", "status", "last_seq"
    ):
        ended[root], seqs[root] = status in ENDED, last_seq
    while level:
        children = Execution.objects.filter(parent_execution_id__in=level).values_list(
            "pk", "parent_execution_id", "status", "last_seq"
        )
        level = []
        for child, parent, status, last_seq in children:
            parent_of[child], ended[child], seqs[child] = parent, status in ENDED, last_seq
            level.append(child)
    members: dict[UUID, list[UUID]] = {root: [root] for root, _ in found}
    for child in parent_of:  # in the order found: level by level
        members[_root(child, parent_of)].append(child)
    page = Page()
    for root, ended_at in found:
        tree = members[root]
        if all(ended.get(member, False) for member in tree):
            events = sum(seqs.get(member, 0) for member in tree)
            page.trees.append(Tree(root, ended_at, tuple(tree), events))
        else:
            page.unfinished += 1
    return page


def _root(member: UUID, parent_of: dict[UUID, UUID]) -> UUID:
    while member in parent_of:
        member = parent_of[member]
    return member


def summary(criteria: Criteria) -> tuple[int, int]:
    """(roots, their own events): what the progress bar counts down."""
    totals = roots(criteria).aggregate(events=Sum("last_seq"))
    return roots(criteria).count(), totals["events"] or 0
