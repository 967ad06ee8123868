"""Reads of schedules for the API and admin."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet

from executions.schedules.models import Schedule


def schedule_list() -> QuerySet[Schedule]:
    """Every schedule, oldest first, with what its serializer reads joined in."""
    return Schedule.objects.select_related("workflow", "version").order_by("created_at", "id")


def schedule_get(*, schedule_id: uuid.UUID | str) -> Schedule | None:
    """The schedule, or None for an unknown id or one that is not a UUID at all."""
    try:
        pk = schedule_id if isinstance(schedule_id, uuid.UUID) else uuid.UUID(schedule_id)
    except ValueError:
        return None
    return schedule_list().filter(pk=pk).first()
