"""The sweeper: makes the database's truth happen whatever the broker forgot.

Run by beat every WORKFLOW_SWEEP_INTERVAL seconds. Every action is a conditional update
or goes through a service that is one, so two sweepers at once do each thing once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from executions import messages
from executions.engine.statuses import EXECUTION_TERMINAL
from executions.models import Attempt, AttemptStatus, Execution, Timer
from executions.services.advance import execution_advance
from executions.services.attempts import attempt_time_out
from executions.services.children import children_pending_notice, parent_notify
from executions.services.timers import timer_fire

BATCH = 500


@dataclass
class SweepReport:
    timed_out: int = 0
    timers_fired: int = 0
    republished: int = 0
    advanced: int = 0
    notified: int = 0


def sweep() -> SweepReport:
    report = SweepReport()
    now = timezone.now()
    expired = Attempt.objects.filter(status=AttemptStatus.RUNNING).filter(
        Q(lease_expires_at__lt=now) | Q(deadline_at__lt=now)
    )
    for attempt in expired.order_by("lease_expires_at")[:BATCH]:
        reason = _timeout_reason(attempt, now)
        report.timed_out += attempt_time_out(attempt_id=attempt.pk, reason=reason)
    due = Timer.objects.filter(fired_at__isnull=True, due_at__lte=now).order_by("due_at")
    for timer_id in due.values_list("pk", flat=True)[:BATCH]:
        report.timers_fired += timer_fire(timer_id=timer_id)
    report.republished = _republish_lost(now)
    for child_id in children_pending_notice():
        report.notified += parent_notify(child_id=child_id)
    report.advanced = _advance_undecided()
    return report


def _timeout_reason(attempt: Attempt, now) -> str:
    if attempt.deadline_at is not None and attempt.deadline_at < now:
        return "timeout_seconds passed before the attempt finished"
    return f"lease expired: worker {attempt.worker_id or '?'} stopped heartbeating"


def _republish_lost(now) -> int:
    """Scheduled attempts nobody claimed in time: their message was lost (or is slow)."""
    cutoff = now - timedelta(seconds=settings.WORKFLOW_REPUBLISH_AFTER_SECONDS)
    stale = Attempt.objects.filter(status=AttemptStatus.SCHEDULED, published_at__lt=cutoff)
    count = 0
    for attempt_id, published_at in stale.values_list("pk", "published_at")[:BATCH]:
        # Conditional on the old stamp, so of two sweepers only one republishes.
        if Attempt.objects.filter(pk=attempt_id, published_at=published_at).update(
            published_at=now
        ):
            messages.publish_attempt(attempt_id)
            count += 1
    return count


def _advance_undecided() -> int:
    pending = Execution.objects.filter(last_seq__gt=F("decided_seq")).exclude(
        status__in=EXECUTION_TERMINAL
    )
    count = 0
    for execution_id in pending.values_list("pk", flat=True)[:BATCH]:
        execution_advance(execution_id=execution_id)
        count += 1
    return count
