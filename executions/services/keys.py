"""A client's Idempotency-Key: one namespace over starts, replays and retries.

A start or a replay keeps its key on the execution it creates; an accepted retry keeps
its key in a RetryRequest row. Each keeps a fingerprint of its request beside the key: a
repeat of the same request finds the first answer, and any other request with the key
(another body, another execution, or another operation) is refused. Keys the engine
uses for its own starts live in another column and never meet these.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from executions.models import Execution, RetryRequest
from workflows.refusals import Refused


class IdempotencyConflict(Refused):
    """The Idempotency-Key was used before for a different request: HTTP 409."""


def fingerprint(request: dict[str, Any]) -> str:
    """A hash of what identifies a request (canonical JSON)."""
    return hashlib.sha256(json.dumps(request, sort_keys=True, default=str).encode()).hexdigest()


def execution_by_key(key: str, fingerprint: str) -> Execution | None:
    """The execution a start or replay with this key created, or None; a conflict when
    the key was used for another request."""
    existing = Execution.objects.filter(idempotency_key=key).first()
    if existing is not None and existing.request_fingerprint != fingerprint:
        raise _conflict(key, f"execution {existing.id}")
    if existing is None and RetryRequest.objects.filter(idempotency_key=key).exists():
        raise _conflict(key, "a retry")
    return existing


def retry_by_key(key: str, fingerprint: str) -> RetryRequest | None:
    """The retry accepted with this key, or None; a conflict when the key was used for
    another request (another retry, a start or a replay)."""
    existing = RetryRequest.objects.filter(idempotency_key=key).first()
    if existing is not None and existing.request_fingerprint != fingerprint:
        raise _conflict(key, f"a retry of execution {existing.execution_id}")
    if existing is None:
        started = Execution.objects.filter(idempotency_key=key).values_list("id", flat=True)
        for execution_id in started[:1]:
            raise _conflict(key, f"execution {execution_id}")
    return existing


def _conflict(key: str, first: str) -> IdempotencyConflict:
    return IdempotencyConflict(
        f"Idempotency-Key '{key}' was already used for a different request ({first}); "
        "use a new key for a new request"
    )
