"""Named signals: POST /executions/{id}/signals/{name}. The signal is recorded on the
execution (no node); decide delivers it to the `signal` node waiting for that name, now
or when one starts waiting (executions/engine/waits.py).

Signal-with-start (POST /executions with an Idempotency-Key and a `signal`): the signal
goes to the execution the key started, or the start and the signal commit together."""

from __future__ import annotations

from datetime import datetime
from http import HTTPStatus
from typing import Any
from uuid import UUID

from django.db import transaction

from executions.definitions import definition_for
from executions.engine.events import Decision, EventType, Source
from executions.engine.payloads import SignalReceived, to_json
from executions.engine.statuses import EXECUTION_TERMINAL
from executions.kernel.advance import record_and_advance
from executions.kernel.lock import lock_execution, looking_after
from executions.models import Execution
from executions.services.control import NotAllowed, UnknownNode
from executions.services.start import execution_start
from workflows.dsl import Definition, NodeBody
from workflows.kinds.map import MapSpec
from workflows.kinds.signal import SignalSpec
from workflows.models import WorkflowVersion
from workflows.refusals import Refused


class UnknownSignal(Refused):
    """A signal-with-start names a signal no node of the workflow waits for: HTTP 400."""

    status_code = HTTPStatus.BAD_REQUEST

    def body(self) -> dict[str, Any]:
        return {"signal": {"name": [str(self)]}, "detail": str(self)}


def signal_names(definition: Definition) -> set[str]:
    """The names the definition's `signal` nodes wait for (a map's body included)."""
    bodies: list[NodeBody] = list(definition.nodes)
    bodies += [n.spec.node for n in definition.nodes if isinstance(n.spec, MapSpec) and n.spec.node]
    return {body.spec.name for body in bodies if isinstance(body.spec, SignalSpec)}


def execution_signal(
    *, execution_id: UUID | str, name: str, data: Any = None, by: str = ""
) -> Execution:
    with looking_after(), transaction.atomic():
        locked = lock_execution(execution_id)
        execution = locked.execution
        if name not in signal_names(definition_for(execution.version_id)):
            raise UnknownNode(f"no signal node of this execution's definition waits for '{name}'")
        if execution.status in EXECUTION_TERMINAL:
            raise NotAllowed(f"execution is already {execution.status}; no signal can reach it")
        payload = SignalReceived(data=data, by=by, name=name)
        signal = Decision(EventType.SIGNAL_RECEIVED, data=to_json(payload))
        record_and_advance(locked, [signal], source=Source.API)
        return execution


def execution_signal_with_start(
    *,
    version: WorkflowVersion,
    input: Any,
    idempotency_key: str,
    name: str,
    data: Any = None,
    by: str = "",
    start_at: datetime | None = None,
    priority: int = 0,
    tags: dict[str, str] | None = None,
) -> tuple[Execution, bool]:
    """Deliver signal `name` to the execution `idempotency_key` started, or start it (as
    execution_start would) with the signal recorded in the same transaction, waiting for
    its node. Returns (execution, started). Racing callers with one key: one of them
    starts it; the others, once it commits, find it and signal it, so every signal is
    recorded once. The signal is not part of the key's request: starts that differ only
    in their signals are the same start."""
    names = signal_names(definition_for(version.pk))
    if name not in names:
        waits = ", ".join(sorted(names)) or "none: it has no signal node"
        raise UnknownSignal(
            f"no signal node of workflow '{version.workflow.name}' (version {version.version}) "
            f"waits for '{name}'; it waits for {waits}"
        )
    with looking_after(), transaction.atomic():
        execution, started = execution_start(
            version=version,
            input=input,
            idempotency_key=idempotency_key,
            start_at=start_at,
            by=by,
            priority=priority,
            tags=tags,
            key_errors=True,
        )
        if execution.status in EXECUTION_TERMINAL:
            if started:
                return execution, started  # the start itself failed: nothing waits
            raise NotAllowed(
                f"execution {execution.pk}, which Idempotency-Key '{idempotency_key}' "
                f"started, has already {execution.status}: no signal can reach it (use a new "
                "key to start another)"
            )
        execution_signal(execution_id=execution.pk, name=name, data=data, by=by)
    return execution, started
