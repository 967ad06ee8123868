"""Token buckets of nodes' rate limits: a row per rendered key, shared by every execution
whose node names that key (workflows/dsl/rate_limit.py). The claim gate and the dispatch
of held attempts read and write a row only under its lock (executions/kernel/rates.py)."""

from __future__ import annotations

from django.db import models


class RateBucket(models.Model):
    #: `key:<rendered key>`, or `node:<workflow id>:<node id>` for a node without a key.
    key = models.CharField(max_length=255, primary_key=True)
    #: Tokens left at `refilled_at`: each start takes one; they come back at the node's
    #: per_second, up to its burst. Fractional: a refill between two claims is exact.
    tokens = models.FloatField()
    refilled_at = models.DateTimeField()
    #: The limit as the node that last took a token declared it: what the dispatch of
    #: held attempts refills by (versions of a workflow may differ).
    per_second = models.FloatField()
    burst = models.PositiveIntegerField()

    def __str__(self) -> str:
        return f"{self.key}: {self.tokens:.2f} at {self.refilled_at:%H:%M:%S.%f}"
