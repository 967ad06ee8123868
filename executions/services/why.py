"""Why a node is not running: the pure explanation (executions/engine/why.py) over the
execution's current state and the attempt, timer and child rows it reads here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db.models import Count, Q

from executions.definitions import definition_for
from executions.engine import why as explain
from executions.engine.statuses import EXECUTION_TERMINAL, ExecutionStatus
from executions.kernel.capacity import in_flight_cap
from executions.kernel.log import state_now
from executions.kernel.rates import rate_waits_until
from executions.models import Attempt, AttemptStatus, Execution, Timer, TimerKind
from executions.services import admission
from executions.services.control import UnknownNode
from nodes.executors.function import transactional
from workflows.dsl import Definition
from workflows.models import Pool


def why_execution(execution: Execution) -> list[dict[str, Any]]:
    """`{"node_id", "status", "reasons"}` for every node of `execution` not settled."""
    return explain.why(definition_for(execution.version_id), state_now(execution), _rows(execution))


def why_node(execution: Execution, node_id: str) -> dict[str, Any]:
    """One node's `{"node_id", "status", "reasons"}`, settled or not; UnknownNode (404)
    for an id the execution's definition does not have."""
    definition = definition_for(execution.version_id)
    try:
        definition.node_for(node_id)
    except KeyError:
        raise UnknownNode(f"no node '{node_id}' in this execution's definition") from None
    state = state_now(execution)
    return explain.why_node(definition, state, _rows(execution), node_id)


def _rows(execution: Execution) -> explain.Rows:
    """The rows the state does not hold, read once each: active attempts, unfired
    timers and running children (one query apiece, whatever the node count)."""
    rows = list(
        Attempt.objects.filter(
            execution=execution, status__in=[AttemptStatus.SCHEDULED, AttemptStatus.RUNNING]
        )
        .order_by("attempt")
        .values(
            "node_id",
            "attempt",
            "status",
            "scheduled_at",
            "worker_id",
            "lease_expires_at",
            "published_at",
            "pool_id",
            "rate_key",
            "pk",
        )
    )
    pools = {str(row["pool_id"]) for row in rows if row["pool_id"] and row["published_at"] is None}
    definition = definition_for(execution.version_id)
    attempts = {
        row["node_id"]: explain.AttemptRow(
            attempt=row["attempt"],
            status=row["status"],
            scheduled_at=row["scheduled_at"],
            worker=row["worker_id"],
            lease_expires_at=row["lease_expires_at"],
            published=row["published_at"] is not None,
            transactional=transactional(definition.node_for(row["node_id"])),
        )
        for row in rows
    }
    timers, start_due_at = {}, None
    for node_id, kind, due_at in Timer.objects.filter(
        execution=execution, fired_at__isnull=True
    ).values_list("node_id", "kind", "due_at"):
        if kind == TimerKind.START:
            start_due_at = due_at
        elif kind != TimerKind.DEADLINE:  # the execution's, read from its state
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
        extra={
            **_held(execution),
            "pools": _pools(pools),
            "rates": _rates(definition, rows),
            "in_flight_cap": in_flight_cap(),
        },
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


def _rates(definition: Definition, rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """node id -> its rate limit's key, rate, burst and when it may start, for the
    attempts their rate limit holds back."""
    found = {}
    for row in rows:
        key, node = row["rate_key"], definition.node_for(row["node_id"])
        if not key or row["published_at"] is not None or node.rate_limit is None:
            continue
        due = rate_waits_until(key, row["pk"])
        found[row["node_id"]] = {
            "key": key,
            "per_second": node.rate_limit.per_second,
            "burst": node.rate_limit.burst,
            "due_at": due.isoformat().replace("+00:00", "Z") if due else None,
        }
    return found


def _pools(names: set[str]) -> dict[str, dict[str, int]]:
    """name -> {"slots", "running"} of the pools the execution's held attempts wait for."""
    if not names:
        return {}
    running = Count("attempts", filter=Q(attempts__status=AttemptStatus.RUNNING))
    return {
        name: {"slots": slots, "running": count}
        for name, slots, count in Pool.objects.filter(name__in=names)
        .annotate(running=running)
        .values_list("name", "slots", "running")
    }
