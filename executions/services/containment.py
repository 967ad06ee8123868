"""Fault boundaries: where an exception raised while handling one execution stops.

Every loop or task that serves many executions (the sweeper's items, the worker and
orchestrator tasks, timers, child notices, starts, schedule fires) runs each execution's
work inside `boundary()`. An exception there is logged with the execution id and, in a
fresh transaction, recorded as that execution's `engine_error` fact; decide then ends the
execution failed (engine/containment.py) and nothing else is disturbed.

Transient database errors (a lost connection, a deadlock, a serialization failure) say
nothing about the execution: they are logged and left to the next tick or redelivery.
If even recording the engine error fails, the execution is left alone for a while
(`backoff`), so the sweeper does not retry the same failure on every tick.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from uuid import UUID

from django.db import InterfaceError, OperationalError, transaction

from executions.engine.containment import engine_error_data
from executions.engine.events import Decision, EventType, Source
from executions.engine.statuses import EXECUTION_TERMINAL
from executions.kernel.advance import record_and_advance
from executions.kernel.lock import lock_execution, looking_after
from executions.models import Attempt, AttemptStatus, Timer
from nodes.secrets import redact
from workflows import clock, logs

log = logging.getLogger(__name__)

#: Errors that are the database's, not the execution's: try again later, fail nothing.
TRANSIENT = (OperationalError, InterfaceError)


class Backoff:
    """Executions whose engine error could not even be recorded, and when to try again.
    Per process (each sweeper process backs off on its own): a bound, not a record."""

    FIRST_SECONDS = 5.0
    MAX_SECONDS = 600.0
    MAX_ENTRIES = 10_000

    def __init__(self) -> None:
        self._until: dict[str, tuple[int, float]] = {}

    def failed(self, key: str) -> float:
        count = self._until.get(key, (0, 0.0))[0] + 1
        delay = min(self.FIRST_SECONDS * 2 ** (count - 1), self.MAX_SECONDS)
        if len(self._until) >= self.MAX_ENTRIES:
            self._prune()
        self._until[key] = (count, time.monotonic() + delay)
        return delay

    def blocked(self) -> list[str]:
        """Keys to leave alone now."""
        now = time.monotonic()
        return [key for key, (_, until) in self._until.items() if until > now]

    def _prune(self) -> None:
        now = time.monotonic()
        self._until = {k: v for k, v in self._until.items() if v[1] > now}


backoff = Backoff()


def execution_fail_engine_error(
    *, execution_id: UUID | str, exc: BaseException, where: str, source: Source
) -> bool:
    """Append engine_error to the execution and end it, in a fresh transaction (a savepoint
    inside an outer one). False: it had already ended, there is nothing to end."""
    with looking_after(), transaction.atomic():
        locked = lock_execution(execution_id)
        execution = locked.execution
        if execution.status in EXECUTION_TERMINAL:
            return False
        # An exception's text may hold anything the worker held, a secret included.
        fact = Decision(EventType.ENGINE_ERROR, data=redact(engine_error_data(exc, where)))
        record_and_advance(locked, [fact], source=source)
        # The decisions cancelled every active node's rows; these are any left over (a
        # scheduled start, rows out of step with a log the engine could not read).
        now = clock.now()
        Attempt.objects.filter(
            execution=execution, status__in=[AttemptStatus.SCHEDULED, AttemptStatus.RUNNING]
        ).update(status=AttemptStatus.CANCELLED, finished_at=now)
        Timer.objects.filter(execution=execution, fired_at__isnull=True).update(fired_at=now)
    return True


def contain(exc: Exception, *, where: str, execution_id: UUID | str | None, source: Source) -> bool:
    """Log `exc` with its execution and end that execution with an engine error. False:
    the error could not be recorded (it is logged, and the execution backed off)."""
    if execution_id is None:
        log.error("%s failed outside any execution", where, exc_info=exc)
        return False
    log.error("%s: engine error in execution %s", where, execution_id, exc_info=exc)
    try:
        ended = execution_fail_engine_error(
            execution_id=execution_id, exc=exc, where=where, source=source
        )
    except Exception:
        delay = backoff.failed(str(execution_id))
        log.exception(
            "%s: could not record the engine error of execution %s; leaving it for %.0fs",
            where,
            execution_id,
            delay,
        )
        return False
    if not ended:
        # It had ended, yet handling it still raises (a stale row): stop retrying it.
        backoff.failed(str(execution_id))
    return True


@contextmanager
def boundary(
    where: str,
    execution_of: Callable[[], UUID | str | None],
    *,
    source: Source,
    reraise_transient: bool = False,
) -> Iterator[None]:
    """Contain what the block raises to the execution `execution_of()` names (called only
    after a failure). Transient database errors are re-raised when asked (a Celery task:
    the worker logs the failure, the sweeper redoes from the database what it left), else
    logged. The execution a block binds to the log context is unbound at its end."""
    with logs.scope():
        try:
            yield
        except TRANSIENT:
            if reraise_transient:
                raise
            log.warning("%s: database unavailable; the next tick retries", where, exc_info=True)
        except Exception as exc:
            contain(exc, where=where, execution_id=_resolve(execution_of), source=source)


def _resolve(execution_of: Callable[[], UUID | str | None]) -> UUID | str | None:
    try:
        return execution_of()
    except Exception:
        log.exception("could not tell which execution failed")
        return None


def attempt_boundary(attempt_id: int) -> AbstractContextManager[None]:
    """The worker's boundary around one run_task message (eager dispatch stays within the
    attempt's execution)."""

    def execution_of() -> UUID | str | None:
        rows = Attempt.objects.filter(pk=attempt_id).values_list("execution_id", flat=True)
        return rows.first()

    return boundary("worker", execution_of, source=Source.WORKER, reraise_transient=True)


def execution_of_timer(timer_id: int) -> Callable[[], UUID | str | None]:
    return lambda: Timer.objects.filter(pk=timer_id).values_list("execution_id", flat=True).first()
