"""Held attempts: scheduled in the log, kept out of the broker until there is room.

Two limits hold attempts back:

- a pool's slots, across executions: the claim gate (`pool_admits`) counts the pool's
  running attempts under the Pool row's lock and sends an attempt back to held when the
  pool is full; `pool_dispatch` publishes the pool's held attempts as slots free up;
- WORKFLOW_MAX_IN_FLIGHT_PER_EXECUTION, the unclaimed messages one execution may have in
  the broker: `top_up` publishes held attempts as claims take the ones out.

An attempt is held while its row is scheduled with published_at NULL. Which ones are
released is the pure choice of executions/engine/capacity.py. Messages go out after
commit, through the unit's Outbox or on_commit, never under a lock. Where the Pool row
stands in the lock order: kernel/lock.py.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from functools import partial

from django.db import connection, transaction
from django.db.models import Count, Q, QuerySet

from executions import messages
from executions.definitions import definition_for
from executions.engine.capacity import Waiting, pool_room, release
from executions.engine.statuses import ExecutionStatus
from executions.models import Attempt, AttemptStatus, Execution
from executions.sqlnames import sql
from workflows import clock
from workflows.conf import engine_settings
from workflows.models import Pool

log = logging.getLogger(__name__)

#: One row per attempt released: (id, node id, attempt number).
Released = tuple[int, str, int]


def pool_of(column: object) -> str | None:
    """An Attempt's pool_id as the pool's name (the key is Pool.name: to_field)."""
    return str(column) if column else None


def in_flight_cap() -> int:
    return engine_settings.MAX_IN_FLIGHT_PER_EXECUTION


# The in-flight cap: room(cap, unclaimed) of the pure core, counted and released in one
# statement (it runs on every claim from the broker and every unit that schedules).
_TOP_UP = sql(
    """
UPDATE {a} SET {a.published_at} = %(now)s, {a.released_at} = %(now)s
WHERE {a.id} IN (
    SELECT {a.id} FROM {a}
    WHERE {a.execution} = %(execution)s AND {a.status} = '{scheduled}'
      AND {a.published_at} IS NULL AND {a.pool} IS NULL AND {a.rate_key} IS NULL
    ORDER BY {a.scheduled_at}, {a.id}
    LIMIT (
        SELECT CASE WHEN COUNT(*) < %(cap)s THEN %(cap)s - COUNT(*) ELSE 0 END
        FROM {a}
        WHERE {a.execution} = %(execution)s AND {a.status} = '{scheduled}'
          AND {a.published_at} IS NOT NULL AND {a.pool} IS NULL
    )
)
RETURNING {a.id}, {a.node_id}, {a.attempt}
""",
    a=Attempt,
    scheduled=AttemptStatus.SCHEDULED.value,
)


def top_up(execution: Execution, now: datetime, outbox: messages.Outbox) -> int:
    """Publish the execution's held attempts (pool-less) up to its in-flight cap, oldest
    first. Inside the execution's lock: two top-ups of one execution never race."""
    params = {
        # As the ORM stores it (on SQLite: naive UTC text, no offset, which comparisons
        # with ORM-written stamps need).
        "now": connection.ops.adapt_datetimefield_value(now),
        "execution": Execution._meta.pk.get_db_prep_value(execution.pk, connection),
        "cap": in_flight_cap(),
    }
    with connection.cursor() as cursor:
        cursor.execute(_TOP_UP, params)
        rows: list[Released] = sorted(cursor.fetchall(), key=lambda row: row[0])
    if rows:
        outbox.add(partial(publish_released, execution, rows))
    return len(rows)


def publish_released(execution: Execution, rows: Iterable[Released]) -> None:
    """The messages of the execution's attempts `rows`, marked published: after commit."""
    _publish(execution.workflow_id, execution.version_id, execution.priority, rows)


def _publish(workflow_id: int, version_id: int, priority: int, rows: Iterable[Released]) -> None:
    """The released attempts' messages (after commit), named and routed by node type, at
    their execution's priority, over one producer (messages.publish_attempts). Each send on
    its own: one that fails (its node gone from a definition that no longer parses, the
    broker refusing it) leaves the others going out; the sweeper republishes the one that
    did not (it is marked published)."""
    try:
        workflow = messages.workflow_name(workflow_id)
        definition = definition_for(version_id)
    except Exception:
        log.warning("could not name released attempts; the sweeper will", exc_info=True)
        workflow, definition = "", None
    batch = []
    for attempt_id, node_id, attempt in rows:
        try:
            kind = definition.node_for(node_id).type if definition is not None else ""
        except Exception:
            log.warning("could not route attempt %s by its node type", attempt_id, exc_info=True)
            kind = ""
        shadow = messages.attempt_name(workflow, node_id, attempt) if workflow else None
        batch.append(messages.AttemptMessage(attempt_id, shadow, kind, priority))
    messages.publish_attempts(batch)


# Pools.


def locking(pools: QuerySet[Pool]) -> QuerySet[Pool]:
    """Pool rows locked until the transaction ends, the one way every pool lock is taken.

    FOR NO KEY UPDATE, not FOR UPDATE: the lock serialises claims (and slot changes) with
    each other, while the KEY SHARE lock an INSERT of an Attempt row referencing the pool
    takes for its foreign key does not wait on it (a unit scheduling pool attempts would
    otherwise queue behind every claim's pool check). Nothing changes a pool's name, the
    key attempts refer to. On SQLite the IMMEDIATE transaction already holds the
    database's write lock."""
    if not connection.features.has_select_for_update:
        return pools
    return pools.select_for_update(no_key=connection.features.has_select_for_no_key_update)


def _lock_pool(name: str) -> int | None:
    """The pool's slots, its row locked until the transaction ends (None: no such pool)."""
    return locking(Pool.objects.filter(name=name)).values_list("slots", flat=True).first()


def pool_admits(pool: str, attempt_id: int) -> bool:
    """The claim gate, inside the claimer's transaction (after the Execution lock): true
    when the pool has a free slot, its row then locked until the claim commits so the
    next claimer counts this one running. Full: the attempt goes back to held (its
    message is spent) and the next release publishes it again."""
    slots = _lock_pool(pool)
    running = Attempt.objects.filter(pool_id=pool, status=AttemptStatus.RUNNING).count()
    if slots is not None and running < slots:
        return True
    Attempt.objects.filter(pk=attempt_id, status=AttemptStatus.SCHEDULED).update(
        published_at=None, released_at=None
    )
    return False


def pool_dispatch(*, pool: str) -> int:
    """Publish the pool's held attempts that fit: its slots less those running and those
    already in the broker. In its own transaction, holding only the Pool row's lock."""
    with transaction.atomic():
        slots = _lock_pool(pool)
        if slots is None:
            return 0
        active = Attempt.objects.filter(
            pool_id=pool, status__in=[AttemptStatus.RUNNING, AttemptStatus.SCHEDULED]
        )
        # A paused execution's attempts wait for its resume: they neither count as coming
        # nor are released (execution_resume dispatches their pools).
        paused = Q(execution__status=ExecutionStatus.PAUSED)
        counts = active.aggregate(
            running=Count("pk", filter=Q(status=AttemptStatus.RUNNING)),
            unclaimed=Count(
                "pk",
                filter=Q(status=AttemptStatus.SCHEDULED, published_at__isnull=False) & ~paused,
            ),
        )
        free = pool_room(slots, counts["running"], counts["unclaimed"])
        if not free:
            return 0
        held = active.filter(status=AttemptStatus.SCHEDULED, published_at__isnull=True)
        held = held.exclude(paused)
        # The execution's priority first (9 first), then first scheduled, first released.
        columns = ("pk", "execution__priority", "scheduled_at", "node_id", "attempt")
        ordered = held.order_by("-execution__priority", "scheduled_at", "pk")
        candidates = list(
            ordered.values_list(*columns, "execution__workflow_id", "execution__version_id")[:free]
        )
        chosen = set(release(free, [Waiting(p, at, pk) for pk, p, at, *_ in candidates]))
        now = clock.now()
        Attempt.objects.filter(
            pk__in=chosen, status=AttemptStatus.SCHEDULED, published_at__isnull=True
        ).update(published_at=now, released_at=now)
        for pk, priority, _, node_id, attempt, workflow_id, version_id in candidates:
            if pk in chosen:
                rows = [(pk, node_id, attempt)]
                transaction.on_commit(partial(_publish, workflow_id, version_id, priority, rows))
        return len(chosen)


def dispatch_after_commit(pools: Iterable[str], outbox: messages.Outbox) -> None:
    """A dispatch of each pool once the caller's transaction (which freed or filled a
    slot) commits: the dispatch must see it, and takes no lock while the caller holds one."""
    for pool in sorted(set(pools)):
        outbox.add(partial(_dispatch_safely, pool))


def _dispatch_safely(pool: str) -> None:
    # After commit: a failure here loses nothing (the sweeper's pool phase is the backstop).
    try:
        pool_dispatch(pool=pool)
    except Exception:
        log.warning("could not dispatch pool %s; the sweeper will", pool, exc_info=True)
