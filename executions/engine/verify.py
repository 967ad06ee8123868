"""Replay verification: re-derive every orchestrator decision from the events before it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from executions.engine.decide import decide
from executions.engine.events import Decision, Event, Source
from executions.engine.fold import apply_event
from executions.engine.state import ExecutionState
from workflows.dsl import Definition


@dataclass(frozen=True)
class Divergence:
    """The first place the log disagrees with what the engine decides today."""

    seq: int
    expected: Decision | None
    recorded: Event | None

    def __str__(self) -> str:
        def show(item: Decision | Event | None) -> str:
            if item is None:
                return "nothing"
            return f"{item.type} node={item.node_id} attempt={item.attempt} data={item.data}"

        return (
            f"divergence at seq {self.seq}: expected {show(self.expected)}, "
            f"recorded {show(self.recorded)}"
        )


def _same(decision: Decision, event: Event) -> bool:
    return (decision.type, decision.node_id, decision.attempt, decision.data) == (
        event.type,
        event.node_id,
        event.attempt,
        event.data,
    )


def verify(
    definition: Definition,
    events: Iterable[Event],
    *,
    execution_id: str,
    progress: Callable[[int], None] | None = None,
) -> Divergence | None:
    """None when every run of engine events is exactly what decide returns before it."""
    return verify_log(definition, events, execution_id=execution_id, progress=progress)[0]


def verify_log(
    definition: Definition,
    events: Iterable[Event],
    *,
    execution_id: str,
    progress: Callable[[int], None] | None = None,
) -> tuple[Divergence | None, ExecutionState]:
    """verify(), and the state folded from the events (as far as the first divergence)."""
    state = ExecutionState(execution_id)
    run: list[Event] = []
    for count, event in enumerate(events, 1):
        if progress and not count % PROGRESS_EVERY:
            progress(PROGRESS_EVERY)
        if event.source == Source.ENGINE:
            run.append(event)
            continue
        if run:
            found = _check_run(definition, state, run)
            if found:
                return found, state
            run = []
        apply_event(state, event)
    if run:
        return _check_run(definition, state, run), state
    # Facts and the decisions they lead to are appended in one transaction, so a log never
    # ends on a fact that still asks for a decision.
    missing = decide(definition, state)
    return (Divergence(state.last_seq + 1, missing[0], None) if missing else None), state


#: Events between two progress reports (a callback per event would cost more than folding).
PROGRESS_EVERY = 1024


def _check_run(
    definition: Definition, state: ExecutionState, run: list[Event]
) -> Divergence | None:
    expected = decide(definition, state)
    for index, event in enumerate(run):
        wanted = expected[index] if index < len(expected) else None
        if wanted is None or not _same(wanted, event):
            return Divergence(event.seq, wanted, event)
        apply_event(state, event)
    if len(expected) > len(run):
        return Divergence(run[-1].seq + 1, expected[len(run)], None)
    return None
