"""The metrics' own tables: pending deltas (written with the events) and their totals."""

from __future__ import annotations

from django.db import models


class MetricDelta(models.Model):
    """What one committed unit of work changed (executions/metrics/tally.py); folded into
    MetricSeries and deleted by the next scrape (executions/metrics/ledger.py)."""

    id = models.BigAutoField(primary_key=True)
    data = models.JSONField()

    def __str__(self) -> str:
        return f"metric delta {self.pk}"


class MetricSeries(models.Model):
    """One time series' value: a counter's total, a gauge's level, a histogram bucket's
    count (not cumulative), sum or count. Updated only by scrapes, never by the engine."""

    name = models.CharField(max_length=100)
    #: The labels as canonical JSON (sorted keys, no spaces): part of the series' identity.
    labels = models.CharField(max_length=500)
    value = models.FloatField(default=0.0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["name", "labels"], name="metric_series_unique")
        ]

    def __str__(self) -> str:
        return f"{self.name}{self.labels} = {self.value}"
