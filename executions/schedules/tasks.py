"""Celery entry point the beat fires for each schedule (one PeriodicTask per schedule)."""

from __future__ import annotations

from executions.engine.events import Source
from executions.schedules.services import schedule_release, schedule_run
from executions.services.containment import boundary
from workflows.celery import ORCHESTRATOR_QUEUE, engine_task


# acks_late + reject_on_worker_lost: a tick whose worker died is redelivered, and the
# idempotency key makes the redelivery start nothing new if the first run got through.
@engine_task(queue=ORCHESTRATOR_QUEUE)
def run_schedule(schedule_id: str) -> str | None:
    # A fault boundary: what one schedule's fire raises is logged with its id and stops
    # there (an execution that started and broke is ended inside execution_start).
    with boundary(f"schedule {schedule_id}", lambda: None, source=Source.API):
        execution = schedule_run(schedule_id=schedule_id)
        return str(execution.pk) if execution is not None else None
    return None


@engine_task(queue=ORCHESTRATOR_QUEUE)
def release_schedule(schedule_id: str) -> str | None:
    """An execution the schedule started ended: its buffered fire (overlap buffer_one) may
    start."""
    with boundary(f"schedule {schedule_id}", lambda: None, source=Source.API):
        execution = schedule_release(schedule_id=schedule_id)
        return str(execution.pk) if execution is not None else None
    return None
