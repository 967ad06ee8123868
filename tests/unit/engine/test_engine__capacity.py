"""The pure choice of which held attempts to release (executions/engine/capacity.py):
never past the room there is, first by priority then first in first out, and nothing
waits forever while slots keep freeing up."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from executions.engine.capacity import Waiting, crowded, pool_room, release, room
from executions.engine.state import ExecutionState, NodeState
from executions.engine.statuses import TaskStatus

T0 = datetime(2026, 1, 1, tzinfo=UTC)

waitings = st.lists(
    st.builds(
        Waiting,
        priority=st.integers(0, 9),
        scheduled_at=st.integers(0, 50).map(lambda s: T0 + timedelta(seconds=s)),
        attempt_id=st.integers(1, 10_000),
    ),
    unique_by=lambda w: w.attempt_id,
    max_size=40,
)


def test_room_table() -> None:
    table = [(3, 0, 3), (3, 2, 1), (3, 3, 0), (3, 5, 0), (0, 0, 0)]
    assert [(limit, busy, room(limit, busy)) for limit, busy, _ in table] == table
    # A pool counts what runs and what is already in the broker, coming.
    assert pool_room(slots=4, running=1, unclaimed=2) == 1
    assert pool_room(slots=2, running=3, unclaimed=0) == 0  # slots lowered under the load


@given(
    slots=st.integers(0, 10),
    running=st.integers(0, 12),
    unclaimed=st.integers(0, 5),
    waiting=waitings,
)
def test_never_above_the_slots(
    slots: int, running: int, unclaimed: int, waiting: list[Waiting]
) -> None:
    chosen = release(pool_room(slots, running, unclaimed), waiting)
    assert len(chosen) <= max(slots - running - unclaimed, 0)
    assert len(chosen) == min(len(waiting), max(slots - running - unclaimed, 0))
    assert len(set(chosen)) == len(chosen)
    assert set(chosen) <= {w.attempt_id for w in waiting}


@given(free=st.integers(0, 10), waiting=waitings)
def test_order_respected_within_a_priority_and_higher_first(
    free: int, waiting: list[Waiting]
) -> None:
    chosen = set(release(free, waiting))
    for left in waiting:
        if left.attempt_id in chosen:
            continue
        for taken in waiting:
            if taken.attempt_id not in chosen:
                continue
            # Nothing released ahead of one that should go first: higher priority, or the
            # same priority scheduled earlier (ties by id).
            assert taken.sort_key() < left.sort_key(), (taken, left)


@given(waiting=waitings, slots=st.integers(1, 5))
def test_nothing_starved_while_slots_free_up(waiting: list[Waiting], slots: int) -> None:
    """Rounds of release, each finishing what it released: every waiting attempt is
    released within ceil(n / slots) rounds, in the order of its sort key."""
    left, order, rounds = list(waiting), [], 0
    while left:
        rounds += 1
        chosen = release(pool_room(slots, 0, 0), left)
        assert chosen, "room and waiting attempts, but nothing released"
        order += chosen
        left = [w for w in left if w.attempt_id not in chosen]
    assert rounds <= -(-len(waiting) // slots)
    assert order == [w.attempt_id for w in sorted(waiting, key=Waiting.sort_key)]


def _state(scheduled: int, other: int) -> ExecutionState:
    state = ExecutionState("e")
    for i in range(scheduled):
        state.nodes[f"s{i}"] = NodeState(f"s{i}", status=TaskStatus.SCHEDULED)
    for i in range(other):
        state.nodes[f"r{i}"] = NodeState(f"r{i}", status=TaskStatus.SUCCEEDED)
    return state


def test_crowded_only_past_the_cap() -> None:
    assert not crowded(_state(scheduled=4, other=100), cap=4)
    assert crowded(_state(scheduled=5, other=0), cap=4)
    assert not crowded(_state(scheduled=0, other=3), cap=4)
