"""Parked nodes (retry_policy.on_exhausted "park"): an operator's retry (another round of
attempts) or fail (the node fails as it would have without parking). Each answer is a
fact, `task_unparked`; advance decides what follows."""

from __future__ import annotations

from uuid import UUID

from django.db import transaction

from executions.definitions import definition_for
from executions.engine.events import EventType, Source
from executions.engine.payloads import TaskUnparked, decided
from executions.engine.statuses import TaskStatus
from executions.kernel.advance import record_and_advance
from executions.kernel.lock import lock_execution, looking_after
from executions.kernel.log import load_state
from executions.models import Execution
from executions.services.control import NotAllowed, UnknownNode

#: The operator's answers to a parked node.
ACTIONS = ("retry", "fail")


def parked_task_retry(*, execution_id: UUID | str, node_id: str, by: str = "") -> Execution:
    """Give the parked node another round of attempts, the first at once."""
    return _unpark(execution_id, node_id, "retry", by)


def parked_task_fail(*, execution_id: UUID | str, node_id: str, by: str = "") -> Execution:
    """Fail the parked node for good: the execution fails (compensations run) as it would
    have without on_exhausted "park"."""
    return _unpark(execution_id, node_id, "fail", by)


def _unpark(execution_id: UUID | str, node_id: str, action: str, by: str) -> Execution:
    with looking_after(), transaction.atomic():
        locked = lock_execution(execution_id)
        execution = locked.execution
        try:
            definition_for(execution.version_id).node_for(node_id)
        except KeyError:
            raise UnknownNode(f"no node '{node_id}' in this execution's definition") from None
        state = load_state(execution)
        current = state.node(node_id)
        if current.status != TaskStatus.PARKED:
            raise NotAllowed(
                f"node '{node_id}' is {current.status}, not parked: only a node parked by "
                'retry_policy.on_exhausted "park" can be retried or failed this way'
            )
        answer = decided(
            EventType.TASK_UNPARKED, TaskUnparked(action=action, by=by), node_id, current.attempt
        )
        record_and_advance(locked, [answer], source=Source.API, state=state)
        return execution
