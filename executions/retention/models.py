"""What a purged execution leaves behind."""

from __future__ import annotations

from typing import Any

from django.db import models


class Tombstone(models.Model):
    """A purged execution: its id answers 410 with these fields, and an archive of its
    history verifies against `last_hash` (the hash of its last event) and `events`."""

    #: The execution's own id.
    id = models.UUIDField(primary_key=True, editable=False)
    workflow = models.ForeignKey(
        "workflows.WorkflowDefinition", on_delete=models.PROTECT, related_name="+"
    )
    version = models.ForeignKey(
        "workflows.WorkflowVersion", on_delete=models.PROTECT, related_name="+"
    )
    status = models.CharField(max_length=16)
    ended_at = models.DateTimeField(null=True, blank=True)
    purged_at = models.DateTimeField()
    #: How many events its log held (its last seq).
    events = models.PositiveIntegerField()
    last_hash = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        ordering = ["-purged_at", "id"]
        indexes = [models.Index(fields=["-purged_at", "id"], name="tombstone_purged_idx")]

    def __str__(self) -> str:
        return f"{self.id} ({self.status}, purged)"

    def as_body(self) -> dict[str, Any]:
        """The 410's body: exactly these fields."""
        return {
            "id": str(self.id),
            "workflow": self.workflow.name,
            "version": self.version.version,
            "status": self.status,
            "ended_at": _iso(self.ended_at),
            "purged_at": _iso(self.purged_at),
            "events": self.events,
            "last_hash": self.last_hash,
        }


def _iso(moment: Any) -> str | None:
    if moment is None:
        return None
    text = moment.isoformat()
    # As DRF renders datetimes: UTC as "Z".
    return text[:-6] + "Z" if text.endswith("+00:00") else text
