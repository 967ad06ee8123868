"""The inline driver: the engine's messages run in this process, from a queue, by the
bodies of the tasks a worker would run; and its clock, moved on to the next due time
whenever nothing is left to run now.

Every message the engine publishes (executions/messages.py) comes here instead of the
broker. A run_task message runs the worker runtime's body (executions/worker/runtime.py)
with a lease keeper that renews nothing in no thread: nothing runs beside the attempt and
the clock stands still while it runs. The others run their Celery task's body. When the
queue is empty, the clock (workflows/clock.py) jumps to the earliest time something falls
due (a timer of a delay, a retry's backoff, a wait's timeout; a running attempt's lease
or deadline) and the sweeper, run then as beat would run it, fires it. So a delay of a
day passes at once and every timestamp recorded says a day went by.

In a test's transaction (Django's TestCase, pytest-django's `db`), nothing commits and
on_commit callbacks never run by themselves: after each step the driver runs those the
step registered, in order, as the commit would have.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Min

from executions import messages, tasks
from executions.engine.statuses import EXECUTION_TERMINAL, ExecutionStatus, TaskStatus
from executions.kernel.rates import rate_waits_until
from executions.models import Attempt, AttemptStatus, Execution, Task, Timer
from executions.services.sweep import sweep
from executions.worker.lease import InlineKeeper
from executions.worker.runtime import run_attempt
from nodes.registry import WorkflowFunction, standing_in
from workflows import clock
from workflows.kinds import all_kinds

log = logging.getLogger(__name__)

#: The task each message names (but run_task's, run with its keeper).
BODIES: dict[str, Callable[..., Any]] = {
    messages.FIRE_TIMER: tasks.fire_timer,
    messages.NOTIFY_PARENT: tasks.notify_parent,
    messages.ADMIT: tasks.admit,
    messages.CANCEL_EXECUTION: tasks.cancel_execution,
    messages.LOOK_INBOX: tasks.look_inbox,
    messages.RELEASE_SCHEDULE: tasks.release_schedule,
}

#: Messages and sweeps one settle may take: past it the run is stuck in a loop.
MAX_STEPS = 200_000


class Stuck(RuntimeError):
    """The execution kept the engine busy past MAX_STEPS without settling."""


def answered_kinds() -> set[str]:
    """The kinds that wait for someone's answer (an approval, a signal): the clock stops
    while one waits, and the test answers through the result."""
    return {kind.name for kind in all_kinds() if kind.times_out_waiting}


@dataclass
class Driver:
    #: The execution driven (its children are driven with it).
    root: str
    #: Where the virtual clock stands, ahead of the real one, between two drives.
    offset: timedelta = timedelta(0)
    functions: Mapping[str, WorkflowFunction] = field(default_factory=dict)
    queue: deque[tuple[str, tuple[Any, ...]]] = field(default_factory=deque)
    _mark: int = 0

    def receive(self, task: str, args: tuple[Any, ...], countdown: float) -> None:
        # A timer's wake-up that is not due yet is dropped: the clock gets to its due time
        # only once nothing else is left, and the sweeper fires it then.
        if countdown <= 0:
            self.queue.append((task, args))

    @contextmanager
    def driving(self) -> Iterator[None]:
        """The engine inside the block publishes to this driver, on its virtual clock,
        with the test's stand-in functions."""
        connection = transaction.get_connection()
        with (
            clock.shifted(self.offset),
            messages.diverted(self.receive),
            standing_in(self.functions),
        ):
            self._mark = len(connection.run_on_commit)
            try:
                yield
                self.committed()
            finally:
                self.offset = clock.offset()

    def settle(self, until: datetime | None = None) -> None:
        """Run until the execution ends, or waits for an answer, or nothing more can
        happen by itself. `until`: let the clock run to then, whatever waits."""
        last_due = None
        for _ in range(MAX_STEPS):
            self.committed()
            if self.queue:
                self.deliver(*self.queue.popleft())
                continue
            tree = self.tree()
            due = self.next_due(tree)
            if until is not None and (due is None or due > until):
                clock.advance(until - clock.now())
                until = None
            elif until is None and (due is None or self.ended() or self.awaits_answer(tree)):
                return
            elif due == last_due:
                return  # due, and the sweeper leaves it (a paused execution's, say)
            else:
                assert due is not None
                clock.advance(due - clock.now())
                last_due = due
            # What fell due, the sweeper does, as beat would have it do.
            report = sweep()
            if report.timers_fired or report.timed_out:
                # It takes a batch at a time: more may be due at that same time.
                last_due = None
        raise Stuck(f"execution {self.root} did not settle within {MAX_STEPS} steps")

    def deliver(self, task: str, args: tuple[Any, ...]) -> None:
        """One message, run by its task's body in this process."""
        if task == messages.RUN_TASK:
            run_attempt(*args, keeper=InlineKeeper())
        else:
            BODIES[task](*args)

    def committed(self) -> None:
        """The on_commit callbacks the engine registered inside the test's transaction,
        run as its commit would run them (callbacks they register run too)."""
        connection = transaction.get_connection()
        if not connection.in_atomic_block:
            return  # each commit ran them
        pending = connection.run_on_commit
        while len(pending) > self._mark:
            _, callback, robust = pending.pop(self._mark)
            if not robust:
                callback()
                continue
            try:
                callback()
            except Exception:
                log.exception("an on_commit callback failed (robust: ignored)")

    def tree(self) -> list[str]:
        """The execution and its children, theirs, and so on."""
        found, level = [self.root], [self.root]
        while level:
            level = [
                str(pk)
                for pk in Execution.objects.filter(parent_execution_id__in=level).values_list(
                    "pk", flat=True
                )
            ]
            found += level
        return found

    def running(self) -> list[str]:
        """The tree's executions that have not ended, the root first."""
        tree = self.tree()
        live = set(
            map(
                str,
                Execution.objects.filter(pk__in=tree)
                .exclude(status__in=EXECUTION_TERMINAL)
                .values_list("pk", flat=True),
            )
        )
        return [execution_id for execution_id in tree if execution_id in live]

    def ended(self) -> bool:
        status = Execution.objects.values_list("status", flat=True).get(pk=self.root)
        return status in EXECUTION_TERMINAL

    def awaits_answer(self, tree: list[str]) -> bool:
        return Task.objects.filter(
            execution_id__in=tree, status=TaskStatus.WAITING, type__in=answered_kinds()
        ).exists()

    def next_due(self, tree: list[str]) -> datetime | None:
        """The earliest time something of the tree falls due for the sweeper."""
        timers = Timer.objects.filter(execution_id__in=tree, fired_at__isnull=True).exclude(
            execution__status=ExecutionStatus.PAUSED
        )
        running = Attempt.objects.filter(execution_id__in=tree, status=AttemptStatus.RUNNING)
        times = [
            timers.aggregate(at=Min("due_at"))["at"],
            running.aggregate(at=Min("lease_expires_at"))["at"],
            running.aggregate(at=Min("deadline_at"))["at"],
        ]
        # Attempts a rate limit holds back: due when their bucket has a token again.
        limited = Attempt.objects.filter(
            execution_id__in=tree, status=AttemptStatus.SCHEDULED, published_at__isnull=True
        ).exclude(rate_key__isnull=True)
        for key in limited.values_list("rate_key", flat=True).distinct().order_by("rate_key"):
            times.append(rate_waits_until(str(key)))
        known = [at for at in times if at is not None]
        if not known:
            return None
        # A hair past it: the sweeper takes what is due strictly before its now.
        return min(known) + timedelta(milliseconds=1)
