"""Celery entry points: each is one call into a service, inside a fault boundary
(services/containment.py): what one execution raises ends that execution, not the task's
worker or the loop that sent it. Transient database errors propagate, for redelivery."""

from __future__ import annotations

import contextlib
from uuid import UUID

from executions.engine.events import Source
from executions.kernel.lock import after_commit
from executions.models import Execution

# Celery's autodiscovery imports an app's tasks module: the daily purge's and the schedules'
# tasks come with it.
from executions.retention.tasks import purge_expired as purge_expired
from executions.schedules.tasks import release_schedule as release_schedule
from executions.schedules.tasks import run_schedule as run_schedule
from executions.services.admission import admit as admit_key
from executions.services.children import parent_notify
from executions.services.containment import boundary, execution_of_timer
from executions.services.control import NotAllowed, execution_cancel
from executions.services.sweep import sweep as run_sweep
from executions.services.timers import timer_fire
from executions.worker.runtime import run_task
from workflows.celery import ORCHESTRATOR_QUEUE, engine_task

#: The node task lives with the worker runtime; imported here so Celery's autodiscovery,
#: which reads each app's tasks module, registers it.
__all__ = ["run_task"]


def _for(execution_id: str, where: str) -> contextlib.AbstractContextManager[None]:
    return boundary(where, lambda: execution_id, source=Source.WORKER, reraise_transient=True)


@engine_task(queue=ORCHESTRATOR_QUEUE)
def fire_timer(timer_id: int) -> None:
    with boundary(
        "timer", execution_of_timer(timer_id), source=Source.TIMER, reraise_transient=True
    ):
        timer_fire(timer_id=timer_id)


# Acknowledged as it starts: a sweep lost with its worker is the next sweep's to do,
# never one to deliver again late.
@engine_task(queue=ORCHESTRATOR_QUEUE, acks_late=False, reject_on_worker_lost=False)
def sweep() -> dict[str, int]:
    return vars(run_sweep())


@engine_task(queue=ORCHESTRATOR_QUEUE)
def notify_parent(child_id: str) -> None:
    def parent_of() -> UUID | None:
        rows = Execution.objects.filter(pk=child_id).values_list("parent_execution_id", flat=True)
        return rows.first()

    # Recording the child's outcome is the parent's step: a failure there is the parent's.
    with boundary("child notice", parent_of, source=Source.WORKER, reraise_transient=True):
        parent_notify(child_id=child_id)


@engine_task(queue=ORCHESTRATOR_QUEUE)
def admit(workflow_id: int, key: str) -> None:
    # Each held execution's failed start is contained inside; what else fails is no one
    # execution's (the sweeper runs admission again).
    with boundary("admission", lambda: None, source=Source.WORKER, reraise_transient=True):
        admit_key(workflow_id=workflow_id, key=key)


@engine_task(queue=ORCHESTRATOR_QUEUE)
def cancel_execution(execution_id: str) -> None:
    with _for(execution_id, "cancel"), contextlib.suppress(NotAllowed):
        # NotAllowed: it ended on its own first.
        execution_cancel(execution_id=execution_id, by="parent cancelled")


@engine_task(queue=ORCHESTRATOR_QUEUE)
def look_inbox(execution_id: str) -> None:
    # A look handed on (kernel/lock.py hand_on): cut again, it hands on again.
    after_commit(execution_id)
