"""Sub-workflows: a `workflow` node's attempt starts a child execution and waits for it.

The child is found again by its idempotency key `child:<parent>:<node>:<attempt>`, so a
duplicated or republished message starts it once. Parent and child are never locked in
the same transaction: the child is started in its own, the parent hears back in another.
"""

from __future__ import annotations

import logging

from django.db import transaction

from executions import store
from executions.engine.events import Decision, EventType, Source
from executions.engine.statuses import EXECUTION_TERMINAL, ExecutionStatus
from executions.models import Attempt, AttemptStatus, Execution
from executions.services.advance import record_and_advance
from executions.services.attempts import Claimed, attempt_complete, attempt_fail, attempt_park
from executions.services.start import execution_start

log = logging.getLogger(__name__)


def child_key(execution_id: object, node_id: str, attempt: int) -> str:
    return f"child:{execution_id}:{node_id}:{attempt}"


def child_of(attempt: Attempt) -> Execution | None:
    key = child_key(attempt.execution_id, attempt.node_id, attempt.attempt)
    return Execution.objects.filter(idempotency_key=key).first()


def child_start(*, claimed: Claimed, worker_id: str) -> None:
    """Start (or find) the child execution, note it in the parent's log, park the attempt."""
    from workflows.models import WorkflowVersion

    node = claimed.node
    versions = WorkflowVersion.objects.filter(workflow__name=node.workflow).order_by("-version")
    version = versions.filter(version=node.version).first() if node.version else versions.first()
    if version is None:
        error = {
            "type": "UnknownWorkflow",
            "retryable": False,
            "message": f"no workflow '{node.workflow}' version {node.version or 'latest'}",
        }
        attempt_fail(attempt_id=claimed.attempt_id, worker_id=worker_id, error=error)
        return
    parent = Execution.objects.get(pk=claimed.execution_id)
    child, created = execution_start(
        version=version,
        input=claimed.input if claimed.input is not None else {},
        idempotency_key=child_key(parent.pk, node.id, claimed.attempt),
        parent=parent,
    )
    if created:
        with transaction.atomic():
            locked = store.lock_execution(parent.pk)
            started = Decision(
                EventType.CHILD_WORKFLOW_STARTED,
                node.id,
                claimed.attempt,
                {
                    "child_execution_id": str(child.pk),
                    "workflow": version.workflow.name,
                    "version": version.version,
                },
            )
            record_and_advance(locked, [started], source=Source.WORKER)
    # No lease while the child runs: the child has its own; timeout_seconds still applies.
    attempt_park(attempt_id=claimed.attempt_id, worker_id=worker_id)
    if child.status in EXECUTION_TERMINAL:
        parent_notify(child_id=child.pk)


def parent_notify(*, child_id: object) -> bool:
    """Record a finished child's outcome as its parent node's result (once)."""
    child = Execution.objects.filter(pk=child_id).first()
    if child is None or child.status not in EXECUTION_TERMINAL or not child.idempotency_key:
        return False
    _, parent_id, node_id, attempt = child.idempotency_key.split(":")
    row = Attempt.objects.filter(
        execution_id=parent_id, node_id=node_id, attempt=int(attempt)
    ).first()
    if row is None or row.status != AttemptStatus.RUNNING:
        return False
    if child.status == ExecutionStatus.SUCCEEDED:
        output = child.output
        return attempt_complete(attempt_id=row.pk, worker_id=row.worker_id, output=output)
    error = {
        "type": "ChildWorkflowFailed" if child.status == "failed" else "ChildWorkflowCancelled",
        "message": f"child execution {child.pk} {child.status}",
        "retryable": False,
        "child_execution_id": str(child.pk),
        "cause": child.error,
    }
    return attempt_fail(attempt_id=row.pk, worker_id=row.worker_id, error=error)


def children_pending_notice() -> list[object]:
    """Parked attempts whose child has ended: the notice was lost (the sweeper resends)."""
    parked = Attempt.objects.filter(status=AttemptStatus.RUNNING, lease_expires_at__isnull=True)
    ended = []
    for attempt in parked[:500]:
        child = child_of(attempt)
        if child is not None and child.status in EXECUTION_TERMINAL:
            ended.append(child.pk)
    return ended
