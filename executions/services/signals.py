"""Named signals: POST /executions/{id}/signals/{name}. The signal is recorded on the
execution (no node); decide delivers it to the `signal` node waiting for that name, now
or when one starts waiting (executions/engine/waits.py)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.db import transaction

from executions.definitions import definition_for
from executions.engine.events import Decision, EventType, Source
from executions.engine.payloads import SignalReceived, to_json
from executions.engine.statuses import EXECUTION_TERMINAL
from executions.kernel.advance import record_and_advance
from executions.kernel.lock import lock_execution
from executions.models import Execution
from executions.services.control import NotAllowed, UnknownNode
from workflows.dsl import Definition, NodeBody
from workflows.kinds.map import MapSpec
from workflows.kinds.signal import SignalSpec


def signal_names(definition: Definition) -> set[str]:
    """The names the definition's `signal` nodes wait for (a map's body included)."""
    bodies: list[NodeBody] = list(definition.nodes)
    bodies += [n.spec.node for n in definition.nodes if isinstance(n.spec, MapSpec) and n.spec.node]
    return {body.spec.name for body in bodies if isinstance(body.spec, SignalSpec)}


def execution_signal(
    *, execution_id: UUID | str, name: str, data: Any = None, by: str = ""
) -> Execution:
    with transaction.atomic():
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
