"""The sweeper: makes the database's truth happen whatever the broker forgot.

Run by beat every WORKFLOW_SWEEP_INTERVAL seconds. Every action is a conditional update
or goes through a service that is one, so two sweepers at once do each thing once.

Each item runs in its own transaction inside a fault boundary (services/containment.py):
an exception while handling one execution ends that execution with an engine error and
the sweep goes on with the next item; a phase whose query fails is skipped this tick.
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from django.db import transaction
from django.db.models import (
    Count,
    DateTimeField,
    Exists,
    ExpressionWrapper,
    F,
    OuterRef,
    Q,
    Subquery,
    Value,
)
from django.db.models.functions import Coalesce, Least

from executions import messages
from executions.engine.events import Source
from executions.engine.statuses import EXECUTION_TERMINAL, ExecutionStatus
from executions.kernel.advance import execution_advance
from executions.kernel.capacity import in_flight_cap, pool_dispatch, top_up
from executions.kernel.lock import lock_execution, look, looking_after
from executions.kernel.rates import rate_dispatch, rate_forget
from executions.liveness import sweep_completed
from executions.models import Attempt, AttemptStatus, Event, Execution, Task, Timer
from executions.services import admission
from executions.services.attempts import DEADLINE_PASSED, attempt_time_out
from executions.services.children import children_pending_notice, parent_notify
from executions.services.containment import TRANSIENT, backoff, boundary
from executions.services.timers import timer_fire
from workflows import clock
from workflows.conf import engine_settings

log = logging.getLogger(__name__)

BATCH = 500
#: The longest an unclaimed attempt waits between two publishes, in republish intervals.
REPUBLISH_BACKOFF_CAP = 16


@dataclass
class SweepReport:
    timed_out: int = 0
    timers_fired: int = 0
    republished: int = 0
    released: int = 0
    advanced: int = 0
    notified: int = 0
    admitted: int = 0
    buckets_forgotten: int = 0


def sweep() -> SweepReport:
    report = SweepReport()
    now = clock.now()
    phases = (
        _time_out,
        _fire_timers,
        _republish_lost,
        _release_held,
        _notify_parents,
        _drain_inboxes,
        _advance_undecided,
        _admit_held,
        _forget_full_buckets,
    )
    for phase in phases:
        # Executions whose engine error could not be recorded: left alone for a while,
        # from the next phase on (one that failed here must not fail again there).
        skip = backoff.blocked()
        try:
            phase(report, now, skip)
        except TRANSIENT:
            log.warning("sweeper: %s skipped this tick", phase.__name__, exc_info=True)
        except Exception:
            # Not one execution's fault (those stop at their item): still, the other
            # phases (timeouts above all) must run.
            log.exception("sweeper: %s failed this tick", phase.__name__)
    try:
        sweep_completed(started=now, report=vars(report))
    except TRANSIENT:
        # The database is down: /healthz and /metrics will show the sweep as late.
        log.warning("sweeper: could not record this sweep's end", exc_info=True)
    return report


def _item(where: str, execution_id: UUID | str) -> AbstractContextManager[None]:
    return boundary(f"sweeper: {where}", lambda: execution_id, source=Source.SWEEPER)


def _time_out(report: SweepReport, now: datetime, skip: list[str]) -> None:
    expired = (
        Attempt.objects.filter(status=AttemptStatus.RUNNING)
        .filter(Q(lease_expires_at__lt=now) | Q(deadline_at__lt=now))
        .exclude(execution_id__in=skip)
    )
    for attempt in expired.order_by("lease_expires_at")[:BATCH]:
        with _item("attempt timeout", attempt.execution_id):
            reason = _timeout_reason(attempt, now)
            report.timed_out += attempt_time_out(attempt_id=attempt.pk, reason=reason)


def _fire_timers(report: SweepReport, now: datetime, skip: list[str]) -> None:
    due = (
        Timer.objects.filter(fired_at__isnull=True, due_at__lte=now)
        .exclude(execution_id__in=skip)
        .exclude(execution__status=ExecutionStatus.PAUSED)  # held until resumed
    )
    for timer_id, execution_id in due.order_by("due_at").values_list("pk", "execution_id")[:BATCH]:
        with _item("timer", execution_id):
            report.timers_fired += timer_fire(timer_id=timer_id)


def _timeout_reason(attempt: Attempt, now: datetime) -> str:
    if attempt.deadline_at is not None and attempt.deadline_at < now:
        return DEADLINE_PASSED
    return f"lease expired: worker {attempt.worker_id or '?'} stopped heartbeating"


def _republish_lost(report: SweepReport, now: datetime, skip: list[str]) -> None:
    """Scheduled attempts nobody claimed in time: their message was lost (or is slow).

    Each attempt backs off: it is sent again once it has waited WORKFLOW_REPUBLISH_AFTER_
    SECONDS since its last publish *and* at least as long as it had waited in the broker
    at that publish, counted from its release (up to REPUBLISH_BACKOFF_CAP intervals), so
    after 15, 30, 60, 120 s... A deep but healthy queue (a wide fan-out behind two
    workers) then holds a few messages per attempt, not one more every 15 s, while a
    message that was really lost is still sent again within the first interval. From its
    release, not its scheduling: an attempt held for minutes and lost once released would
    otherwise wait the backoff's cap. Held attempts (published_at NULL) have no message to
    lose: their pool's dispatch or their execution's top-up sends them.

    Whatever the backoff, an attempt is sent again at once when the broker has evidently
    lost its message: a peer of its execution on the same queue (same priority, FIFO),
    released after its last publish, has been claimed from the broker (`_overtaken`).
    """
    every = timedelta(seconds=engine_settings.REPUBLISH_AFTER_SECONDS)
    cutoff = now - every
    # Rows from before released_at existed were released when scheduled.
    released = Coalesce(F("released_at"), F("scheduled_at"))
    # Capped: so an attempt republished for hours is still sent every 16 intervals.
    waited = Least(F("published_at") - released, Value(every * REPUBLISH_BACKOFF_CAP))
    backed_off = ExpressionWrapper(Value(now) - waited, output_field=DateTimeField())
    # An execution that appended events since the attempt was published, and lately, is
    # being worked on (its workers run its other attempts, eagerly): the message is
    # queued behind them, not lost. Never for longer than the backoff's cap.
    last_event_at = Event.objects.filter(
        execution_id=OuterRef("execution_id"), seq=OuterRef("execution__last_seq")
    ).values("timestamp")[:1]
    idle = (
        Q(last_event_at__isnull=True)
        | Q(last_event_at__lte=F("published_at"))
        | Q(last_event_at__lt=cutoff)
        | Q(published_at__lt=now - every * REPUBLISH_BACKOFF_CAP)
    )
    due = Q(published_at__lt=cutoff) & Q(published_at__lte=backed_off) & idle
    # The workflow and node type name and route the message (messages.publish_attempt).
    node_type = Task.objects.filter(
        execution=OuterRef("execution"), node_id=OuterRef("node_id")
    ).values("type")[:1]
    grace = min(every, timedelta(seconds=max(engine_settings.SWEEP_INTERVAL, 1.0)))
    stale = (
        Attempt.objects.filter(status=AttemptStatus.SCHEDULED, published_at__lt=now - grace)
        .exclude(execution_id__in=skip)
        .exclude(execution__status=ExecutionStatus.PAUSED)  # held until resumed
        .annotate(last_event_at=Subquery(last_event_at), node_type=Subquery(node_type))
        .alias(overtaken=_overtaken(now - grace))
        .filter(due | Q(overtaken=True))
    )
    columns = ("pk", "published_at", "execution_id", "execution__workflow__name", "node_id")
    # Highest priority first, then the longest waiting: when more are lost than one tick
    # sends, the work that should run first is sent first.
    rows = stale.order_by("-execution__priority", "scheduled_at").values_list(
        *columns, "attempt", "node_type", "execution__priority"
    )[:BATCH]
    batch: list[messages.AttemptMessage] = []
    for attempt_id, published_at, execution_id, workflow, node_id, attempt, kind, priority in rows:
        with _item("republish", execution_id):
            # Stamped as it is sent, not at the tick's start (seconds earlier under load):
            # a peer released in between, sent ahead of this copy, is no evidence of its
            # loss (`_overtaken`). Never before `now`, which tests set in the future.
            sent_at = max(now, clock.now())
            # Conditional on the old stamp, so of two sweepers only one republishes.
            if Attempt.objects.filter(pk=attempt_id, published_at=published_at).update(
                published_at=sent_at
            ):
                shadow = messages.attempt_name(workflow, node_id, attempt)
                batch.append(messages.AttemptMessage(attempt_id, shadow, kind or "", priority))
                report.republished += 1
    # In priority order still, over one broker connection.
    messages.publish_attempts(batch)


def _overtaken(claimed_by: datetime) -> Exists:
    """Whether a peer overtook the attempt in the broker: released (first sent) after the
    attempt's last publish, and claimed from its message by `claimed_by`. One queue and
    one priority (the execution's) serve both first in, first out, so the attempt's
    message, sent first, would have been delivered first: it is lost (a broker restart),
    however busy the execution. `claimed_by` a little before now leaves a delivery of
    both at once time to claim the older. Attempts claimed eagerly were never released
    (released_at NULL) and prove nothing. With WORKFLOW_NODE_QUEUES, only a peer of the
    same node type is on the same queue."""
    peers = Attempt.objects.filter(
        execution_id=OuterRef("execution_id"),
        released_at__gt=OuterRef("published_at"),
        claimed_at__lte=claimed_by,
    )
    if engine_settings.NODE_QUEUES:
        peer_type = Task.objects.filter(
            execution=OuterRef("execution"), node_id=OuterRef("node_id")
        ).values("type")[:1]
        peers = peers.annotate(peer_type=Subquery(peer_type)).filter(
            peer_type=OuterRef("node_type")
        )
    return Exists(peers)


def _release_held(report: SweepReport, now: datetime, skip: list[str]) -> None:
    """The backstop of held attempts (kernel/capacity.py): every pool with attempts
    waiting is dispatched and every execution with capped ones topped up, in case the
    dispatch after a commit was lost (a crash between the commit and it). Both publish
    only what there is room for, so running them with nothing lost publishes nothing."""
    held = Attempt.objects.filter(status=AttemptStatus.SCHEDULED, published_at__isnull=True)
    held = held.exclude(execution_id__in=skip).exclude(execution__status=ExecutionStatus.PAUSED)
    pools = held.filter(pool__isnull=False).values_list("pool_id", flat=True).distinct()
    for pool in pools.order_by("pool_id")[:BATCH]:
        with boundary(f"sweeper: pool {pool}", lambda: None, source=Source.SWEEPER):
            report.released += pool_dispatch(pool=str(pool))
    # Rate limits' tokens come back with time alone: each sweep releases what they allow.
    keys = held.filter(rate_key__isnull=False).values_list("rate_key", flat=True).distinct()
    for key in keys.order_by("rate_key")[:BATCH]:
        with boundary(f"sweeper: rate limit {key}", lambda: None, source=Source.SWEEPER):
            report.released += rate_dispatch(key=str(key))
    # Only executions with room under their in-flight cap are worth their lock: counted
    # first, without it (attempt_waiting_idx). A wide map keeps its cap full for as long
    # as it runs, and its lock is the one every claim and result of it queues on.
    in_flight = (
        Attempt.objects.filter(
            execution_id=OuterRef("pk"),
            status=AttemptStatus.SCHEDULED,
            published_at__isnull=False,
            pool__isnull=True,
        )
        .order_by()
        .values("execution_id")
        .annotate(count=Count("pk"))
        .values("count")
    )
    capped = (
        Execution.objects.filter(
            pk__in=held.filter(pool__isnull=True, rate_key__isnull=True).values("execution_id")
        )
        .exclude(status__in=EXECUTION_TERMINAL | {ExecutionStatus.PAUSED})
        .alias(in_flight=Coalesce(Subquery(in_flight), 0))
        .filter(in_flight__lt=in_flight_cap())
        .values_list("pk", flat=True)
    )
    for execution_id in capped.order_by("pk")[:BATCH]:
        with _item("top-up", execution_id), looking_after(), transaction.atomic():
            execution = lock_execution(execution_id).execution
            if execution.status not in EXECUTION_TERMINAL | {ExecutionStatus.PAUSED}:
                outbox = messages.Outbox()
                report.released += top_up(execution, clock.now(), outbox)


def _notify_parents(report: SweepReport, now: datetime, skip: list[str]) -> None:
    for child_id, parent_id in children_pending_notice(exclude_parents=skip):
        with _item("child notice", parent_id):
            report.notified += parent_notify(child_id=child_id)


def _drain_inboxes(report: SweepReport, now: datetime, skip: list[str]) -> None:
    """Facts workers left in the inbox (kernel/inbox.py) that no unit logged: claims
    of attempts still running (logged within a tick, so they show as running), results
    whose holder's look after commit failed or died with its process. An execution whose
    lock is taken is skipped at once: its holder drains the inbox."""
    waiting = Attempt.objects.filter(unlogged=True).exclude(execution_id__in=skip)
    for execution_id in waiting.values_list("execution_id", flat=True).distinct()[:BATCH]:
        with _item("inbox", execution_id):
            # Cut at LOOK_UNITS, the look hands on what is left to a message (lock.look).
            report.advanced += look(execution_id, claims=True)


def _advance_undecided(report: SweepReport, now: datetime, skip: list[str]) -> None:
    pending = (
        Execution.objects.filter(last_seq__gt=F("decided_seq"))
        .exclude(status__in=EXECUTION_TERMINAL)
        .exclude(pk__in=skip)
    )
    for execution_id in pending.values_list("pk", flat=True)[:BATCH]:
        with _item("advance", execution_id):
            execution_advance(execution_id=execution_id)
            report.advanced += 1


def _admit_held(report: SweepReport, now: datetime, skip: list[str]) -> None:
    """Keys with held executions and room: the backstop for a lost `admit` message (an
    ending's, or a held start_at's). One query reads a page of keys with their queue's
    head and running count; only keys with room cost more, each in its own boundary (a
    held execution whose start fails is failed inside admission, the key going on with
    the next). Pages go round the keys in (workflow, key) order, a cursor carrying on where
    the last tick stopped: however many keys wait, each gets its look within a few ticks."""
    global _admission_cursor
    page = admission.held_keys(after=_admission_cursor, count=BATCH, exclude=skip)
    # Round again from the start once a page comes back short.
    _admission_cursor = page[-1][:2] if len(page) == BATCH else None
    for workflow_id, key, due in page:
        if not due:
            continue
        with boundary("sweeper: admission", lambda: None, source=Source.SWEEPER):
            report.admitted += admission.admit(workflow_id=workflow_id, key=key)


#: The last (workflow id, key) the admission phase read in this process (None: from the
#: start). Per process: a sweeper in another process goes round on its own.
_admission_cursor: tuple[int, str] | None = None


def _forget_full_buckets(report: SweepReport, now: datetime, skip: list[str]) -> None:
    """Rate buckets that are full again (kernel/rates.py's rate_forget): a page of BATCH
    keys a tick, a cursor carrying on where the last tick stopped, so every bucket gets
    its look however many keys there are, and no tick scans them all."""
    global _bucket_cursor
    forgotten, _bucket_cursor = rate_forget(after=_bucket_cursor, count=BATCH)
    report.buckets_forgotten += forgotten


#: The last key the previous tick's _forget_full_buckets looked at; None: from the first.
_bucket_cursor: str | None = None
