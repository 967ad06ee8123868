"""Reads that know an execution may have been purged: its id then answers with its
tombstone (HTTP 410) instead of "not found"."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any
from uuid import UUID

from django.db.models import QuerySet
from django.http import Http404

from executions.models import Execution, Tombstone
from workflows.refusals import Refused


class ExecutionPurged(Refused):
    """The execution was purged; `tombstone` is what it left."""

    status_code = HTTPStatus.GONE

    def __init__(self, tombstone: Tombstone) -> None:
        self.tombstone = tombstone
        super().__init__(
            f"execution {tombstone.id} ({tombstone.status}) was purged at "
            f"{tombstone.purged_at.isoformat()}"
        )

    def body(self) -> dict[str, Any]:
        return self.tombstone.as_body()


def tombstone_of(execution_id: UUID | str) -> Tombstone | None:
    return Tombstone.objects.select_related("workflow", "version").filter(pk=execution_id).first()


def execution_or_gone(execution_id: UUID | str, queryset: QuerySet | None = None) -> Execution:
    """The execution; ExecutionPurged if it was purged, else Http404."""
    found = (queryset if queryset is not None else Execution.objects).filter(pk=execution_id)
    execution = found.first()
    if execution is not None:
        return execution
    tombstone = tombstone_of(execution_id)
    if tombstone is not None:
        raise ExecutionPurged(tombstone)
    raise Http404(f"No execution {execution_id}.")
