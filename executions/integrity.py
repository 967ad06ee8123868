"""Whether an execution's stored rows agree with its log, and rewriting them from it.

One execution at a time, from its events as already read (verify_logs reads them in
batches): the hash chain, every orchestrator decision, the projections (Execution and
Task rows), and the operational rows the log implies (Attempt and Timer rows). Only the
log is trusted: a rebuild rewrites every other row from it, and is refused for a log whose
chain or decisions do not verify (that would copy a tampered history into fresh rows).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from django.db import transaction

from executions.definitions import definition_for
from executions.engine.chain import Linked, first_break
from executions.engine.events import Event, EventType
from executions.engine.fold import fold
from executions.engine.inbox import RESULT_EVENTS
from executions.engine.readers import TIMER_KIND
from executions.engine.state import ExecutionState
from executions.engine.statuses import EXECUTION_TERMINAL, TASK_ACTIVE
from executions.engine.verify import verify_log
from executions.kernel.effects import schedules_attempt, timeout_closed_by, timer_started_by
from executions.kernel.lock import lock_execution, looking_after
from executions.kernel.log import engine_events, load_state
from executions.kernel.projections import differences, rebuild
from executions.kernel.unit import UnitOfWork
from executions.models import Attempt, AttemptStatus, Execution, Task, Timer, TimerKind
from workflows import clock
from workflows.dsl import Definition

#: The stored status of an attempt once its result event is in the log: the inbox's own
#: mapping (executions/engine/inbox.py), read the other way.
_RESULT_STATUS = {event: AttemptStatus(status) for status, event in RESULT_EVENTS.items()}
_OPEN = (AttemptStatus.SCHEDULED, AttemptStatus.RUNNING)


@dataclass(frozen=True)
class Problem:
    execution_id: str
    #: chain, decisions, projection, attempts or timers.
    kind: str
    message: str
    seq: int | None = None

    def __str__(self) -> str:
        return f"{self.execution_id} [{self.kind}] {self.message}"

    def as_dict(self) -> dict[str, str | int | None]:
        return {"execution_id": self.execution_id, "kind": self.kind, "seq": self.seq} | {
            "message": self.message
        }


@dataclass(frozen=True)
class ExpectedAttempt:
    status: AttemptStatus
    scheduled_at: datetime


@dataclass(frozen=True)
class ExpectedTimer:
    due_at: datetime
    fired_at: datetime | None


def expected_attempts(events: Iterable[Event]) -> dict[tuple[str, int], ExpectedAttempt]:
    """(node, attempt) -> the Attempt row the log implies: one per worker-run schedule."""
    rows: dict[tuple[str, int], ExpectedAttempt] = {}
    for event in events:
        key = (event.node_id or "", event.attempt or 0)
        if event.type == EventType.TASK_SCHEDULED:
            if schedules_attempt(event):
                rows[key] = ExpectedAttempt(AttemptStatus.SCHEDULED, event.timestamp)
        elif key in rows and event.type == EventType.TASK_STARTED:
            rows[key] = ExpectedAttempt(AttemptStatus.RUNNING, rows[key].scheduled_at)
        elif key in rows and event.type in _RESULT_STATUS:
            rows[key] = ExpectedAttempt(_RESULT_STATUS[event.type], rows[key].scheduled_at)
        elif event.type == EventType.TASK_CANCELLED:
            # The cancel effect closes every open attempt of the node, whatever its number.
            for (node_id, number), row in list(rows.items()):
                if node_id == key[0] and row.status in _OPEN:
                    rows[(node_id, number)] = ExpectedAttempt(
                        AttemptStatus.CANCELLED, row.scheduled_at
                    )
    return rows


def expected_timers(events: Iterable[Event]) -> dict[tuple[str, int, str], ExpectedTimer]:
    """(node, attempt, kind) -> the delay, retry and timeout Timer rows the log implies;
    fired_at is when the log closed one (it fired, or its wait was answered)."""
    timers: dict[tuple[str, int, str], ExpectedTimer] = {}
    for event in events:
        # The effects' own rules (kernel/effects.py): which event starts a timer, which
        # closes one unfired; a timer fires with its timer_fired.
        started, closed = timer_started_by(event), timeout_closed_by(event)
        if started is not None:
            node_id, attempt, kind, due = started
            timers[(node_id, attempt, kind)] = ExpectedTimer(due, None)
        elif event.type == EventType.TIMER_FIRED:
            fired = TIMER_KIND(event.data, event.payload) or TimerKind.DELAY
            key = (event.node_id or "", event.attempt or 0, fired)
            if key in timers:
                timers[key] = ExpectedTimer(timers[key].due_at, event.timestamp)
        elif closed is not None and closed in timers and timers[closed].fired_at is None:
            timers[closed] = ExpectedTimer(timers[closed].due_at, event.timestamp)
    return timers


def check(
    execution: Execution,
    linked: Sequence[Linked],
    events: Sequence[Event],
    *,
    tasks: Sequence[Task] | None = None,
    attempts: Sequence[Attempt] | None = None,
    timers: Sequence[Timer] | None = None,
) -> list[Problem]:
    """Every way the stored rows of one execution disagree with its log."""
    eid = str(execution.pk)
    problems: list[Problem] = []
    found = first_break(linked, last_hash=execution.last_hash)
    if found is not None:
        problems.append(Problem(eid, "chain", str(found), found.seq))
    if len(events) != execution.last_seq:
        message = f"execution.last_seq is {execution.last_seq} but the log has {len(events)}"
        problems.append(Problem(eid, "chain", message, execution.last_seq))
    try:
        definition = definition_for(execution.version_id)
    except Exception as exc:  # a version that no longer parses is a finding, not a crash
        return [*problems, Problem(eid, "decisions", f"definition does not parse: {exc}")]
    divergence, state = verify_log(definition, events, execution_id=eid)
    if divergence is not None:
        problems.append(Problem(eid, "decisions", str(divergence), divergence.seq))
        state = fold(events, execution_id=eid)  # verify stopped at the divergence
    for line in differences(execution, state, tasks=tasks):
        problems.append(Problem(eid, "projection", line))
    problems += _attempt_problems(eid, events, attempts)
    problems += _timer_problems(eid, events, timers)
    return problems


def _attempt_problems(
    eid: str, events: Sequence[Event], rows: Sequence[Attempt] | None
) -> list[Problem]:
    wanted = expected_attempts(events)
    if rows is None:
        rows = list(Attempt.objects.filter(execution_id=eid))
    problems = []
    stored = {(row.node_id, row.attempt): row for row in rows}
    for key, want in sorted(wanted.items()):
        row = stored.get(key)
        if row is None:
            problems.append(Problem(eid, "attempts", f"{_at(key)}: no row, log says {want.status}"))
        elif row.status != want.status and not (row.unlogged and _ahead(row.status, want.status)):
            message = f"{_at(key)}: stored {row.status}, log says {want.status}"
            problems.append(Problem(eid, "attempts", message))
    for key in sorted(set(stored) - set(wanted)):
        problems.append(Problem(eid, "attempts", f"{_at(key)}: a row the log never scheduled"))
    return problems


#: How far an attempt row may be ahead of the log while its facts wait in the inbox
#: (executions/kernel/inbox.py): claimed, or finished, before the lock's holder logged it.
_AHEAD = {
    AttemptStatus.SCHEDULED: {AttemptStatus.RUNNING, *_RESULT_STATUS.values()},
    AttemptStatus.RUNNING: set(_RESULT_STATUS.values()),
}


def _ahead(stored: str, logged: str) -> bool:
    return stored in _AHEAD.get(AttemptStatus(logged), set())


def _timer_problems(
    eid: str, events: Sequence[Event], rows: Sequence[Timer] | None
) -> list[Problem]:
    wanted = expected_timers(events)
    if rows is None:
        rows = list(Timer.objects.filter(execution_id=eid))
    problems = []
    stored = {(t.node_id, t.attempt, t.kind): t for t in rows if t.kind != TimerKind.START}
    for key, want in sorted(wanted.items()):
        timer = stored.get(key)
        where = f"{key[2]} timer {_at(key[:2])}"
        if timer is None:
            problems.append(Problem(eid, "timers", f"{where}: no row"))
        elif timer.due_at != want.due_at:
            message = f"{where}: due {timer.due_at.isoformat()}, log {want.due_at.isoformat()}"
            problems.append(Problem(eid, "timers", message))
        elif want.fired_at is not None and timer.fired_at is None:
            problems.append(Problem(eid, "timers", f"{where}: closed in the log, open in the row"))
    for key in sorted(set(stored) - set(wanted)):
        problems.append(Problem(eid, "timers", f"{key[2]} timer {_at(key[:2])}: not in the log"))
    return problems


def _at(key: tuple[str, int]) -> str:
    return f"{key[0]}#{key[1]}"


def rebuild_rows(execution_id: UUID | str) -> None:
    """Rewrite projections, attempts and timers of one execution from its log."""
    with looking_after(), transaction.atomic():
        locked = lock_execution(execution_id)
        execution = locked.execution
        # What waits in the inbox goes into the log first: the rows are rebuilt from it.
        work = UnitOfWork(locked, load_state(execution))
        if work.pending:
            work.decide()
            work.commit(decided=True)
        events = engine_events(execution.pk)
        state = fold(events, execution_id=str(execution.pk))
        definition = definition_for(execution.version_id)
        rebuild(execution, state, definition)
        _rebuild_attempts(execution, expected_attempts(events), definition)
        _rebuild_timers(execution, expected_timers(events), state)


def _rebuild_attempts(
    execution: Execution, wanted: dict[tuple[str, int], ExpectedAttempt], definition: Definition
) -> None:
    now = clock.now()
    stored = {(a.node_id, a.attempt): a for a in Attempt.objects.filter(execution=execution)}
    for key, row in stored.items():
        if key not in wanted:
            row.delete()
        elif row.status != wanted[key].status:
            Attempt.objects.filter(pk=row.pk).update(status=wanted[key].status)
    missing = [
        Attempt(
            execution=execution,
            node_id=node_id,
            attempt=number,
            status=want.status,
            scheduled_at=want.scheduled_at,
            # The sweeper republishes a scheduled one and times out a running one (its
            # worker lost its row, so it can no longer renew or record). Published, not
            # held: past the in-flight cap for a while at worst; a pool's claim gate
            # still counts its slots.
            published_at=want.scheduled_at,
            released_at=want.scheduled_at,
            pool_id=definition.node_for(node_id).pool,
            lease_expires_at=now if want.status == AttemptStatus.RUNNING else None,
            finished_at=None if want.status in _OPEN else now,
        )
        for (node_id, number), want in wanted.items()
        if (node_id, number) not in stored
    ]
    Attempt.objects.bulk_create(missing)


def _rebuild_timers(
    execution: Execution, wanted: dict[tuple[str, int, str], ExpectedTimer], state: ExecutionState
) -> None:
    now = clock.now()

    def settled(node_id: str) -> bool:
        # A cancel closes a node's timers without timer_fired; a recreated one must not fire.
        if state.status in EXECUTION_TERMINAL:
            return True
        if not node_id:  # the execution's deadline: open while it runs
            return False
        return state.node(node_id).status not in TASK_ACTIVE

    rows = Timer.objects.filter(execution=execution).exclude(kind=TimerKind.START)
    stored = {(t.node_id, t.attempt, t.kind): t for t in rows}
    for key, timer in stored.items():
        want = wanted.get(key)
        if want is None:
            timer.delete()
            continue
        fired_at = timer.fired_at or want.fired_at
        if timer.due_at != want.due_at or fired_at != timer.fired_at:
            Timer.objects.filter(pk=timer.pk).update(due_at=want.due_at, fired_at=fired_at)
    Timer.objects.bulk_create(
        Timer(
            execution=execution,
            node_id=node_id,
            attempt=number,
            kind=kind,
            due_at=want.due_at,
            # An open one the sweeper fires when due: no wait is lost.
            fired_at=want.fired_at or (now if settled(node_id) else None),
        )
        for (node_id, number, kind), want in wanted.items()
        if (node_id, number, kind) not in stored
    )
