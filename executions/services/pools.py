"""Pools: create, change slots, and read them with their use.

The Pool row lives in the workflows app (a definition naming a pool is checked against
it when stored); what runs in a pool is the executions app's (kernel/capacity.py).
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import Count, Q, QuerySet

from executions.kernel.capacity import dispatch_after_commit, locking
from executions.messages import Outbox
from executions.models import AttemptStatus
from workflows.models import Pool


class PoolNameTaken(Exception):
    """A pool of that name exists: HTTP 409 (the name is what definitions refer to)."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"A pool named '{name}' already exists: change its slots with PATCH /pools/{name}."
        )


def pool_create(*, name: str, slots: int, description: str = "", by: str = "") -> Pool:
    pool = Pool(name=name, slots=slots, description=description, created_by=by)
    pool.full_clean(validate_unique=False)
    if Pool.objects.filter(name=name).exists():
        raise PoolNameTaken(name)
    try:
        with transaction.atomic():
            pool.save()
    except IntegrityError:
        raise PoolNameTaken(name) from None  # a concurrent request took the name
    return pool


def pool_update(*, pool: Pool, slots: int | None = None, description: str | None = None) -> Pool:
    """Change a pool's slots (or description). More slots release waiting attempts at
    once; fewer take effect as running attempts finish (none is stopped)."""
    with transaction.atomic():
        locked = locking(Pool.objects.filter(pk=pool.pk)).get()
        if slots is not None:
            locked.slots = slots
        if description is not None:
            locked.description = description
        locked.save(update_fields=["slots", "description"])
        dispatch_after_commit([locked.name], Outbox())
    return locked


def pools_in_use() -> QuerySet[Pool]:
    """Every pool with `running` (slots taken) and `waiting` (attempts scheduled, not
    running yet: held or in the broker) counted from the attempt rows."""
    return Pool.objects.annotate(
        running=Count("attempts", filter=Q(attempts__status=AttemptStatus.RUNNING)),
        waiting=Count("attempts", filter=Q(attempts__status=AttemptStatus.SCHEDULED)),
    ).order_by("name")
