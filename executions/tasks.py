"""Celery entry points: each is one call into a service."""

from __future__ import annotations

import contextlib

from celery import shared_task

from executions.services.advance import execution_advance
from executions.services.sweep import sweep as run_sweep
from executions.services.timers import timer_fire


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def advance_execution(execution_id: str) -> None:
    execution_advance(execution_id=execution_id)


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def fire_timer(timer_id: int) -> None:
    timer_fire(timer_id=timer_id)


@shared_task(ignore_result=True)
def sweep() -> dict[str, int]:
    return vars(run_sweep())


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def notify_parent(child_id: str) -> None:
    from executions.services.children import parent_notify

    parent_notify(child_id=child_id)


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def cancel_execution(execution_id: str) -> None:
    from executions.services.control import NotAllowed, execution_cancel

    with contextlib.suppress(NotAllowed):  # it ended on its own first
        execution_cancel(execution_id=execution_id, by="parent cancelled")
