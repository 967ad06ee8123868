"""Rate limits across executions: the claim gate and the release of waiting attempts.

The gate (`rate_refuses`) runs inside the claim, after the execution's lock (and the
pool's, if any): it locks the key's RateBucket row, refills it, and either takes a token
(the attempt starts) or sends the attempt back to wait, held with its `rate_key`. So the
bound holds on the claims themselves, whatever messages or workers do. `rate_dispatch`
publishes held attempts of a key as tokens come back, at most as many as the bucket holds
less those already in the broker; the sweeper runs it every sweep for every key with
waiting attempts. The arithmetic is executions/engine/rates.py's.

Lock order: Execution, then Pool, then RateBucket; the dispatch takes the RateBucket
alone, so no cycle.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from functools import partial

from django.db import connection, transaction
from django.db.models import Q, QuerySet

from executions.engine.context import template_context
from executions.engine.maps import item_scope
from executions.engine.rates import next_token_at, refilled, whole
from executions.engine.state import ExecutionState
from executions.engine.statuses import ExecutionStatus
from executions.kernel.capacity import _publish
from executions.models import Attempt, AttemptStatus, Execution, RateBucket
from workflows import clock
from workflows.dsl import Node
from workflows.dsl.rate_limit import RateKeyError, RateLimitSpec, render_rate_key

log = logging.getLogger(__name__)


def rate_key_of(execution: Execution, state: ExecutionState, node: Node) -> str | None:
    """The bucket of the node's rate limit in this execution, its key rendered over the
    node's template context (a map item's with its `item` and `index`). None when the key does not
    render: the attempt then starts unlimited and the problem is logged, since the key
    decides only when an attempt runs, never what it does."""
    assert node.rate_limit is not None
    context = {**template_context(state), **item_scope(state, node.id)}
    try:
        return render_rate_key(
            node.rate_limit, context, workflow_id=execution.workflow_id, node_id=node.id
        )
    except RateKeyError:
        log.warning("execution %s: %s starts unlimited", execution.pk, node.id, exc_info=True)
        return None


def _locking(buckets: QuerySet[RateBucket]) -> QuerySet[RateBucket]:
    """RateBucket rows locked until the transaction ends (on SQLite the IMMEDIATE
    transaction already holds the database's write lock)."""
    if not connection.features.has_select_for_update:
        return buckets
    return buckets.select_for_update()


def _bucket(key: str, spec: RateLimitSpec, now: datetime) -> RateBucket:
    """The key's bucket, locked; a new one starts full."""
    full = RateBucket(
        key=key, tokens=spec.burst, refilled_at=now, per_second=spec.per_second, burst=spec.burst
    )
    for _ in range(_CREATE_TRIES):
        # Two first claims of a key race to create it: one insert wins, both then lock it.
        RateBucket.objects.bulk_create([full], ignore_conflicts=True)
        found = _locking(RateBucket.objects.filter(key=key)).first()
        if found is not None:
            return found
        # rate_forget deleted it (full) between the insert and the lock: a full one again.
    raise RuntimeError(f"rate bucket {key!r} deleted {_CREATE_TRIES} times while claimed")


#: A bucket rate_forget deletes is full and idle: a claim that loses it to the delete
#: more than once in a row is not a race but a bug.
_CREATE_TRIES = 3


@dataclass(frozen=True)
class Refused:
    """A claim the key's bucket had no token for: the attempt waits."""

    #: Its first refusal: the log records the wait once per attempt.
    first: bool
    #: When its token is due as the bucket stands (ISO 8601, UTC).
    until: str | None


def rate_refuses(key: str, spec: RateLimitSpec, attempt_id: int) -> Refused | None:
    """The claim gate: None when the key's bucket had a token for this attempt (taken).
    Refused, the attempt waits, held with its key, for the key's dispatch."""
    now = clock.now()
    bucket = _bucket(key, spec, now)
    tokens = refilled(bucket.tokens, bucket.refilled_at, now, spec.per_second, spec.burst)
    admitted = whole(tokens) >= 1
    bucket.tokens = tokens - 1 if admitted else tokens
    bucket.refilled_at, bucket.per_second, bucket.burst = now, spec.per_second, spec.burst
    bucket.save(update_fields=["tokens", "refilled_at", "per_second", "burst"])
    if admitted:
        return None
    mine = Attempt.objects.filter(pk=attempt_id, status=AttemptStatus.SCHEDULED)
    first = mine.filter(rate_key__isnull=True).exists()
    mine.update(published_at=None, released_at=None, rate_key=key)
    until = rate_waits_until(key, attempt_id)
    return Refused(first=first, until=until.isoformat().replace("+00:00", "Z") if until else None)


def _waiting(key: str) -> QuerySet[Attempt]:
    # A paused execution's attempts wait for its resume, which publishes them.
    return Attempt.objects.filter(rate_key=key, status=AttemptStatus.SCHEDULED).exclude(
        Q(execution__status=ExecutionStatus.PAUSED)
    )


def rate_dispatch(*, key: str) -> int:
    """Publish the key's held attempts its bucket has tokens for (less those already in
    the broker, each of which will take one when claimed): priority first, then first
    scheduled. In its own transaction, holding only the bucket's lock."""
    with transaction.atomic():
        bucket = _locking(RateBucket.objects.filter(key=key)).first()
        if bucket is None:
            return 0
        now = clock.now()
        tokens = refilled(bucket.tokens, bucket.refilled_at, now, bucket.per_second, bucket.burst)
        waiting = _waiting(key)
        free = whole(tokens) - waiting.filter(published_at__isnull=False).count()
        if free <= 0:
            return 0
        columns = ("pk", "node_id", "attempt", "execution__priority")
        held = waiting.filter(published_at__isnull=True).order_by(
            "-execution__priority", "scheduled_at", "pk"
        )
        rows = list(
            held.values_list(*columns, "execution__workflow_id", "execution__version_id")[:free]
        )
        chosen = [row[0] for row in rows]
        Attempt.objects.filter(
            pk__in=chosen, status=AttemptStatus.SCHEDULED, published_at__isnull=True
        ).update(published_at=now, released_at=now)
        for pk, node_id, attempt, priority, workflow_id, version_id in rows:
            send = partial(_publish, workflow_id, version_id, priority, [(pk, node_id, attempt)])
            transaction.on_commit(send)
        return len(chosen)


def rate_waits_until(key: str, attempt_id: int | None = None) -> datetime | None:
    """When the held attempt may start, as its bucket stands now: the token for it and for
    those ahead of it in the key's queue (without an attempt: the next token). None: no
    such bucket."""
    bucket = RateBucket.objects.filter(key=key).first()
    if bucket is None:
        return None
    now = clock.now()
    tokens = refilled(bucket.tokens, bucket.refilled_at, now, bucket.per_second, bucket.burst)
    ahead = 0
    if attempt_id is not None:
        mine = Attempt.objects.filter(pk=attempt_id).values_list("scheduled_at", flat=True).first()
        earlier = Q(scheduled_at__lt=mine) | Q(scheduled_at=mine, pk__lt=attempt_id)
        ahead = 0 if mine is None else _waiting(key).filter(earlier).count()
    return next_token_at(tokens, now, bucket.per_second, waiting=ahead)


def rate_forget(*, after: str | None, count: int) -> tuple[int, str | None]:
    """Delete the buckets, among the next `count` keys after `after` (None: from the
    first), that are full again and have no attempt waiting: a full bucket is what a claim
    creates for an unknown key, so forgetting one changes nothing, and without this a row
    stays for every key value ever seen. Returns (deleted, the last key looked at, or
    None once the keys have gone round). In its own transaction; rows a claim holds are
    skipped (SKIP LOCKED), not waited for: they are in use, not idle."""
    with transaction.atomic():
        page = RateBucket.objects.order_by("key")
        if after is not None:
            page = page.filter(key__gt=after)
        if connection.features.has_select_for_update_skip_locked:
            page = page.select_for_update(skip_locked=True)
        rows = list(page[:count])
        if not rows:
            return 0, None
        now = clock.now()
        full = {
            row.key
            for row in rows
            if refilled(row.tokens, row.refilled_at, now, row.per_second, row.burst) >= row.burst
        }
        # rate_dispatch needs the bucket of a key with attempts held for it (a paused
        # execution's, say), so that key's stays even if it is full.
        held = Attempt.objects.filter(
            rate_key__in=full, status=AttemptStatus.SCHEDULED
        ).values_list("rate_key", flat=True)
        gone = full - set(held)
        if gone:
            RateBucket.objects.filter(key__in=gone).delete()
        return len(gone), rows[-1].key if len(rows) == count else None
