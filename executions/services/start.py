"""Starting executions: pinned to a version, idempotent under a client key."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction

from executions import messages
from executions.definitions import definition_for
from executions.engine.events import Decision, Source
from executions.kernel.advance import begin
from executions.kernel.effects import start_timer
from executions.kernel.handle import Locked
from executions.kernel.projections import create_tasks
from executions.models import Execution, TimerKind
from executions.services import admission
from executions.services.containment import TRANSIENT, contain
from executions.services.keys import execution_by_key, fingerprint
from workflows import clock
from workflows.dsl.concurrency import render_key
from workflows.models import WorkflowVersion


def _fingerprint(
    version: WorkflowVersion,
    input: Any,
    start_at: datetime | None,
    faults: Any = None,
    priority: int | None = None,
    replay: dict[str, Any] | None = None,
    tags: dict[str, str] | None = None,
) -> str:
    body = {"version": version.pk, "input": input, "start_at": start_at and start_at.isoformat()}
    if faults is not None:
        body["faults"] = faults
    if priority:  # absent when 0, so the keys of requests without one match as before
        body["priority"] = priority
    if replay is not None:  # a replay is never the same request as a start
        body["replay"] = replay
    if tags:  # absent when none, as priority
        body["tags"] = tags
    return fingerprint(body)


def execution_start(
    *,
    version: WorkflowVersion,
    input: Any,
    idempotency_key: str | None = None,
    engine_key: str | None = None,
    start_at: datetime | None = None,
    replay_of: Execution | None = None,
    parent: Execution | None = None,
    parent_node_id: str = "",
    parent_attempt: int | None = None,
    reuse: list[Decision] | None = None,
    by: str = "",
    faults: dict[str, Any] | None = None,
    priority: int | None = None,
    key_errors: bool = False,
    raise_errors: bool = False,
    replay_request: dict[str, Any] | None = None,
    tags: dict[str, str] | None = None,
) -> tuple[Execution, bool]:
    """Create and start an execution. Returns (execution, created).

    `idempotency_key` is a client's and only ever matches a client's; `engine_key` is the
    engine's own (a schedule's fire, a sub-workflow attempt) and only ever matches the
    engine's: the two namespaces are separate columns. `by`: who started it (a username,
    or the engine's own "schedule:<id>", "parent:<execution id>"), kept for audit.
    `faults`: fault injection (executions/engine/faults.py), recorded in workflow_started;
    the API allows it only where WORKFLOW_FAULT_INJECTION=1, and not with start_at.
    `priority`: 0 to 9 (default: the parent's, else 0). A workflow with a `concurrency`
    limit renders its key here; a start that finds the key full is held (admission.py).
    `key_errors`: an input the key cannot be rendered from raises ConcurrencyKeyError
    before anything is read or written (the API's 400); otherwise the execution is
    created failed, naming it (a schedule or trigger has no one to answer).
    `raise_errors`: a start that fails (a definition that no longer parses, an engine
    error) raises with nothing written, instead of creating a failed execution (the
    Python API's caller is there to answer).
    `replay_request`: what else a replay with `idempotency_key` was asked (its source,
    from_node), so that the key's fingerprint tells it from a start and from other replays.
    `tags`: checked by the caller (executions/tags.py); a child has its parent's.
    """
    key = _concurrency_key(version, input) if key_errors else None
    request = _fingerprint(version, input, start_at, faults, priority, replay_request, tags)
    existing = _existing(idempotency_key, engine_key, request)
    if existing is not None:
        return existing, False
    row: dict[str, Any] = {
        # The workflow row when the caller loaded it with the version (version_resolve
        # does): begin and the response read its name, and would fetch it again.
        **(
            {"workflow": version.workflow}
            if WorkflowVersion.workflow.is_cached(version)
            else {"workflow_id": version.workflow_id}
        ),
        "version": version,
        "input": input,
        "idempotency_key": idempotency_key or None,
        "engine_key": engine_key or None,
        "request_fingerprint": request if idempotency_key else "",
        "replay_of": replay_of,
        "parent_execution": parent,
        "parent_node_id": parent_node_id,
        "parent_attempt": parent_attempt,
        "depth": parent.depth + 1 if parent is not None else 0,
        "created_by": by[:150],
        "priority": priority if priority is not None else parent.priority if parent else 0,
        "tags": dict(parent.tags) if parent is not None else tags or {},
    }
    try:
        with transaction.atomic():
            definition = definition_for(version.pk)
            # start_at in the future: the START timer begins it (or holds it, with a key).
            later = start_at if start_at is not None and start_at > clock.now() else None
            if definition.concurrency is not None:
                row["concurrency_key"] = (
                    key if key is not None else render_key(definition.concurrency, input)
                )
                # Held from the start (a start_at one once its time comes: timers.py).
                row["held"] = later is None
                row["held_start"] = admission.held_start(reuse, faults) if later is None else None
                row["held_at"] = clock.now() if later is None else None
            execution = Execution(**row)
            if later is None and not execution.held:
                # Begun before its rows are written: its unit of work inserts the
                # execution and its Task rows as decided (kernel/projections.py), not an INSERT
                # now and an UPDATE at its commit. No one else can see it before then.
                execution.tasks_unwritten = True
                begin(Locked.new(execution), reuse or [], faults=faults)
            else:
                execution.save(force_insert=True)
                create_tasks(execution, definition)
                if later is not None:
                    _start_later(execution, later)
                elif admission.admit_at_start(execution.workflow_id, execution.concurrency_key):
                    execution.refresh_from_db()
    except TRANSIENT:
        raise
    except Exception as exc:
        if isinstance(exc, IntegrityError):
            # Two starts with the same key raced: the other one won.
            existing = _existing(idempotency_key, engine_key, request)
            if existing is not None:
                return existing, False
        if raise_errors:
            raise
        return _failed_start(row, exc), True
    return execution, True


def _concurrency_key(version: WorkflowVersion, input: Any) -> str | None:
    """The version's concurrency key rendered over `input` (None: no limit, or a definition
    that no longer parses, whose start fails that execution). Raises ConcurrencyKeyError."""
    try:
        spec = definition_for(version.pk).concurrency
    except Exception:
        return None
    return None if spec is None else render_key(spec, input)


def _failed_start(row: dict[str, Any], exc: Exception) -> Execution:
    """The start raised past creating the row (a definition that no longer parses, a bug)
    and was rolled back whole: create the execution bare and end it with the engine error,
    so the request or schedule tick that started it gets a failed execution, not a crash.
    (No savepoint around the start: the happy path pays no round trip for this.)"""
    with transaction.atomic():
        execution = Execution.objects.create(**row)
        if not contain(exc, where="start", execution_id=execution.pk, source=Source.API):
            raise exc  # not even the failure could be recorded: start nothing
    execution.refresh_from_db()
    return execution


def _start_later(execution: Execution, start_at: datetime) -> None:
    # No event yet: workflow_started is appended when the timer fires (services/timers.py).
    start_timer(execution, "", 0, TimerKind.START, start_at, messages.Outbox())


def _existing(
    idempotency_key: str | None, engine_key: str | None, request: str
) -> Execution | None:
    if engine_key:
        # The engine derives its keys from what it starts: the same key is the same start.
        return Execution.objects.filter(engine_key=engine_key).first()
    if idempotency_key:
        return execution_by_key(idempotency_key, request)
    return None
