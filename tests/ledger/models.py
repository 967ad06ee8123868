"""The rows the ledger functions write (tests/ledger/workflow_functions.py)."""

from __future__ import annotations

from django.db import models


class Entry(models.Model):
    """One write of a step: no unique key on purpose, so a step whose writes committed
    twice shows as two rows."""

    execution_id = models.CharField(max_length=36)
    node_id = models.CharField(max_length=128)
    #: The attempt whose run wrote it.
    attempt = models.PositiveIntegerField()
    #: Written by a transactional function (else by a plain one).
    transactional = models.BooleanField()

    objects: models.Manager[Entry] = models.Manager()

    class Meta:
        indexes = [models.Index(fields=["execution_id", "node_id"])]

    def __str__(self) -> str:
        return f"{self.execution_id}:{self.node_id}#{self.attempt}"
