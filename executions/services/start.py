"""Starting executions: pinned to a version, idempotent under a client key."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from executions import messages
from executions.definitions import definition_for
from executions.engine.events import Decision, EventType, Source
from executions.models import Execution, Timer, TimerKind
from executions.projections import create_tasks
from executions.services.advance import record_and_advance
from workflows.models import WorkflowDefinition, WorkflowVersion


class IdempotencyConflict(Exception):
    """The Idempotency-Key was used before for a different request."""


def _fingerprint(version: WorkflowVersion, input: Any, start_at: datetime | None) -> str:
    body = {"version": version.pk, "input": input, "start_at": start_at and start_at.isoformat()}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def execution_start(
    *,
    version: WorkflowVersion,
    input: Any,
    idempotency_key: str | None = None,
    start_at: datetime | None = None,
    replay_of: Execution | None = None,
    parent: Execution | None = None,
    reuse: list[Decision] | None = None,
    by: str = "",
) -> tuple[Execution, bool]:
    """Create and start an execution. Returns (execution, created). `by`: who started it
    (a username, or the engine's own "schedule:<id>", "parent" ...), kept for audit."""
    fingerprint = _fingerprint(version, input, start_at)
    if idempotency_key:
        existing = _by_key(idempotency_key, fingerprint)
        if existing is not None:
            return existing, False
    try:
        with transaction.atomic():
            execution = Execution.objects.create(
                workflow_id=version.workflow_id,
                version=version,
                input=input,
                idempotency_key=idempotency_key or None,
                request_fingerprint=fingerprint if idempotency_key else "",
                replay_of=replay_of,
                parent_execution=parent,
                created_by=by[:150],
            )
            create_tasks(execution, definition_for(version.pk))
            if start_at is not None and start_at > timezone.now():
                _start_later(execution, start_at)
            else:
                begin(execution, reuse or [])
    except IntegrityError:
        if not idempotency_key:
            raise
        # Two requests with the same key raced: the other one won.
        existing = _by_key(idempotency_key, fingerprint)
        if existing is None:
            raise
        return existing, False
    return execution, True


def begin(execution: Execution, reuse: list[Decision] | None = None) -> None:
    """Append workflow_started (and a replay's reused results), then decide. Inside the lock."""
    started = Decision(
        EventType.WORKFLOW_STARTED,
        data={
            "input": execution.input,
            "workflow": execution.workflow.name,
            "version": execution.version.version,
            "replay_of": str(execution.replay_of_id) if execution.replay_of_id else None,
            "by": execution.created_by,
        },
    )
    record_and_advance(execution, [started, *(reuse or [])], source=Source.API)


def _start_later(execution: Execution, start_at: datetime) -> None:
    timer = Timer.objects.create(
        execution=execution, node_id="", attempt=0, kind=TimerKind.START, due_at=start_at
    )
    delay = (start_at - timezone.now()).total_seconds()
    outbox = messages.Outbox()
    outbox.add(lambda: messages.publish_timer(timer.pk, delay))


def _by_key(key: str, fingerprint: str) -> Execution | None:
    existing = Execution.objects.filter(idempotency_key=key).first()
    if existing is not None and existing.request_fingerprint != fingerprint:
        raise IdempotencyConflict(
            f"Idempotency-Key '{key}' was already used for a different request "
            f"(execution {existing.id}); use a new key for a new execution"
        )
    return existing


def resolve_version(workflow: WorkflowDefinition, version: int | None) -> WorkflowVersion:
    versions = workflow.versions.all()
    if version is None:
        return versions.order_by("-version").first()
    return versions.get(version=version)
