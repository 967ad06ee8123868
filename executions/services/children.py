"""Sub-workflows: a `workflow` node's attempt starts a child execution and waits for it.

The child is linked to its parent by foreign key (parent_execution, parent_node_id,
parent_attempt) and started under the engine key `child:<parent>:<node>:<attempt>`, so a
duplicated or republished message starts it once; no client Idempotency-Key can take or
match it. Parent and child are never locked in the same transaction: the child is started
in its own, the parent hears back in another. Children nest at most WORKFLOW_MAX_DEPTH
deep: past it the node fails, so a recursion a definition check missed still ends.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from uuid import UUID

from django.db import transaction
from django.db.models import OuterRef, Subquery

from executions.engine.errors import ErrorRecord
from executions.engine.events import EventType, Source
from executions.engine.payloads import ChildWorkflowStarted, decided
from executions.engine.statuses import EXECUTION_TERMINAL, ExecutionStatus
from executions.kernel.advance import record_and_advance
from executions.kernel.lock import lock_execution, looking_after
from executions.models import Attempt, AttemptStatus, Execution
from executions.services.attempts import Claimed, attempt_complete, attempt_fail, attempt_park
from executions.services.start import execution_start
from workflows.conf import engine_settings
from workflows.kinds.base import spec_of
from workflows.kinds.workflow import WorkflowSpec

log = logging.getLogger(__name__)


def child_key(execution_id: UUID | str, node_id: str, attempt: int) -> str:
    """The engine key of the child an attempt starts (Execution.engine_key)."""
    return f"child:{execution_id}:{node_id}:{attempt}"


def child_of(attempt: Attempt) -> Execution | None:
    return Execution.objects.filter(
        parent_execution_id=attempt.execution_id,
        parent_node_id=attempt.node_id,
        parent_attempt=attempt.attempt,
    ).first()


def _refuse(claimed: Claimed, worker_id: str, type: str, message: str) -> None:
    error = ErrorRecord(type=type, message=message, retryable=False).to_json()
    attempt_fail(attempt_id=claimed.attempt_id, worker_id=worker_id, error=error)


def child_start(*, claimed: Claimed, worker_id: str) -> None:
    """Start (or find) the child execution, note it in the parent's log, park the attempt."""
    from workflows.selectors import version_resolve

    node = claimed.node
    spec = spec_of(node, WorkflowSpec)
    version = version_resolve(name=spec.workflow, number=spec.version)
    if version is None:
        message = f"no workflow '{spec.workflow}' version {spec.version or 'latest'}"
        _refuse(claimed, worker_id, "UnknownWorkflow", message)
        return
    parent = Execution.objects.get(pk=claimed.execution_id)
    limit = engine_settings.MAX_DEPTH
    if parent.depth + 1 > limit:
        message = (
            f"node '{node.id}': starting workflow '{spec.workflow}' would nest sub-workflows "
            f"{parent.depth + 1} deep, past WORKFLOW_MAX_DEPTH={limit} (a workflow that "
            "calls itself, directly or through others?)"
        )
        _refuse(claimed, worker_id, "MaxDepthExceeded", message)
        return
    child, created = execution_start(
        version=version,
        input=claimed.input if claimed.input is not None else {},
        engine_key=child_key(parent.pk, node.id, claimed.attempt),
        parent=parent,
        parent_node_id=node.id,
        parent_attempt=claimed.attempt,
        by=f"parent:{parent.pk}",
    )
    if created:
        with looking_after(), transaction.atomic():
            locked = lock_execution(parent.pk)
            link = ChildWorkflowStarted(
                child_execution_id=str(child.pk),
                workflow=version.workflow.name,
                version=version.version,
            )
            started = decided(EventType.CHILD_WORKFLOW_STARTED, link, node.id, claimed.attempt)
            record_and_advance(locked, [started], source=Source.WORKER)
    # No lease while the child runs: the child has its own; timeout_seconds still applies.
    attempt_park(attempt_id=claimed.attempt_id, worker_id=worker_id)
    if child.status in EXECUTION_TERMINAL:
        parent_notify(child_id=child.pk)


def parent_notify(*, child_id: UUID | str) -> bool:
    """Record a finished child's outcome as its parent node's result (once)."""
    child = Execution.objects.filter(pk=child_id).first()
    if child is None or child.status not in EXECUTION_TERMINAL:
        return False
    if child.parent_execution_id is None or child.parent_attempt is None:
        return False
    row = Attempt.objects.filter(
        execution_id=child.parent_execution_id,
        node_id=child.parent_node_id,
        attempt=child.parent_attempt,
    ).first()
    if row is None or row.status != AttemptStatus.RUNNING:
        return False
    if child.status == ExecutionStatus.SUCCEEDED:
        output = child.output
        return attempt_complete(attempt_id=row.pk, worker_id=row.worker_id, output=output)
    error = ErrorRecord(
        type="ChildWorkflowFailed" if child.status == "failed" else "ChildWorkflowCancelled",
        message=f"child execution {child.pk} {child.status}",
        retryable=False,
        details={"child_execution_id": str(child.pk), "cause": child.error},
    ).to_json()
    return attempt_fail(attempt_id=row.pk, worker_id=row.worker_id, error=error)


def children_pending_notice(*, exclude_parents: Sequence[str] = ()) -> list[tuple[UUID, UUID]]:
    """(child, parent) of ended children whose parent attempt is still parked on them: the
    notice was lost (the sweeper resends it). Starts from the few parked attempts."""
    ended_child = Execution.objects.filter(
        parent_execution_id=OuterRef("execution_id"),
        parent_node_id=OuterRef("node_id"),
        parent_attempt=OuterRef("attempt"),
        status__in=EXECUTION_TERMINAL,
    ).values("pk")[:1]
    parked = (
        Attempt.objects.filter(status=AttemptStatus.RUNNING, lease_expires_at__isnull=True)
        .exclude(execution_id__in=exclude_parents)
        .annotate(child=Subquery(ended_child))
        .filter(child__isnull=False)
    )
    return list(parked.values_list("child", "execution_id")[:500])
