from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models

slug_validator = RegexValidator(
    r"^[a-z0-9][a-z0-9_-]{0,99}$",
    "Use lowercase letters, digits, '-' and '_' (a slug, at most 100 characters).",
)


class WorkflowDefinition(models.Model):
    name = models.CharField(max_length=100, unique=True, validators=[slug_validator])
    description = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    #: The username that created it.
    created_by = models.CharField(max_length=150, blank=True, default="")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def latest(self) -> WorkflowVersion | None:
        return self.versions.order_by("-version").first()


class WorkflowVersion(models.Model):
    """An immutable, numbered definition. Executions pin one; new versions never touch them."""

    workflow = models.ForeignKey(
        WorkflowDefinition, on_delete=models.PROTECT, related_name="versions"
    )
    version = models.PositiveIntegerField()
    definition = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)
    #: The username that created this version.
    created_by = models.CharField(max_length=150, blank=True, default="")

    class Meta:
        ordering = ["workflow_id", "version"]
        constraints = [
            models.UniqueConstraint(fields=["workflow", "version"], name="unique_workflow_version")
        ]

    def __str__(self) -> str:
        return f"{self.workflow.name} v{self.version}"

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None and not kwargs.get("force_insert"):
            raise ValueError("Workflow versions are immutable: create a new version instead.")
        super().save(*args, **kwargs)


class Pool(models.Model):
    """A named number of slots shared by every execution (POST /pools): a node with
    `"pool": "<name>"` runs only while fewer than `slots` attempts of the pool run.

    The count is the running Attempt rows naming the pool, read under this row's lock by
    whoever claims one (executions/kernel/capacity.py), so any number of workers agree.
    """

    name = models.CharField(max_length=100, unique=True, validators=[slug_validator])
    slots = models.PositiveIntegerField()
    description = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=150, blank=True, default="")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.slots} slot{'' if self.slots == 1 else 's'})"
