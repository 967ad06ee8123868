"""Why a node is not running: the pure explanation (executions/engine/why.py) over the
execution's current state and the attempt, timer and child rows it reads here."""

from __future__ import annotations

from typing import Any

from executions import store
from executions.definitions import definition_for
from executions.engine import why as explain
from executions.engine.statuses import EXECUTION_TERMINAL, ExecutionStatus
from executions.models import Attempt, AttemptStatus, Execution, Timer, TimerKind
from executions.services import admission
from executions.services.control import UnknownNode


def why_execution(execution: Execution) -> list[dict[str, Any]]:
    """`{"node_id", "status", "reasons"}` for every node of `execution` not settled."""
    return explain.why(
        definition_for(execution.version_id), store.state_now(execution), _rows(execution)
    )


def why_node(execution: Execution, node_id: str) -> dict[str, Any]:
    """One node's `{"node_id", "status", "reasons"}`, settled or not; UnknownNode (404)
    for an id the execution's definition does not have."""
    definition = definition_for(execution.version_id)
    try:
        definition.node_for(node_id)
    except KeyError:
        raise UnknownNode(f"no node '{node_id}' in this execution's definition") from None
    state = store.state_now(execution)
    return explain.why_node(definition, state, _rows(execution), node_id)


def _rows(execution: Execution) -> explain.Rows:
    """The rows the state does not hold, read once each: active attempts, unfired
    timers and running children (one query apiece, whatever the node count)."""
    attempts = {
        row["node_id"]: explain.AttemptRow(
            attempt=row["attempt"],
            status=row["status"],
            scheduled_at=row["scheduled_at"],
            worker=row["worker_id"],
            lease_expires_at=row["lease_expires_at"],
        )
        for row in Attempt.objects.filter(
            execution=execution, status__in=[AttemptStatus.SCHEDULED, AttemptStatus.RUNNING]
        )
        .order_by("attempt")
        .values("node_id", "attempt", "status", "scheduled_at", "worker_id", "lease_expires_at")
    }
    timers, start_due_at = {}, None
    for node_id, kind, due_at in Timer.objects.filter(
        execution=execution, fired_at__isnull=True
    ).values_list("node_id", "kind", "due_at"):
        if kind == TimerKind.START:
            start_due_at = due_at
        else:
            timers[node_id] = due_at
    children = dict(
        Execution.objects.filter(parent_execution=execution)
        .exclude(status__in=EXECUTION_TERMINAL)
        .order_by("parent_attempt")
        .values_list("parent_node_id", "pk")
    )
    return explain.Rows(
        attempts=attempts,
        timers=timers,
        children={node_id: str(pk) for node_id, pk in children.items()},
        start_due_at=start_due_at,
        extra=_held(execution),
    )


def _held(execution: Execution) -> dict[str, Any]:
    """A held execution's key, limit, running count and place in the queue."""
    if not execution.held or execution.status != ExecutionStatus.PENDING:
        return {}
    key = execution.concurrency_key
    return {
        explain.CONCURRENCY: {
            "key": key,
            "limit": admission.limit_of(execution.pk),
            "running": admission.running_count(execution.workflow_id, key),
            "ahead": admission.ahead_of(execution),
        }
    }
