"""The pure admission decision (engine/admission.py) over random histories of one key:
starts, ends and cancels in any order. Whatever happens, no more than the limit run, they
start in the order they were created, and every held execution starts once enough end."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from executions.engine.admission import Held, to_admit
from executions.engine.state import ExecutionState
from executions.engine.why import CONCURRENCY, Rows, why
from workflows.dsl import parse_definition


@pytest.mark.parametrize(
    ("running", "limits", "admitted"),
    [
        (0, [], []),
        (0, [2, 2, 2], ["e0", "e1"]),
        (1, [2, 2, 2], ["e0"]),
        (2, [2, 2, 2], []),
        (5, [2], []),  # over the limit (a version lowered it): nothing until enough end
        (0, [1, 3, 3], ["e0", "e1", "e2"]),  # each starts under its own version's limit
        (1, [1, 3, 3], []),  # the head does not fit: nobody behind it may pass it
        (0, [3, 1, 3], ["e0"]),  # e1 wants to run alone beside nothing: it waits, so e2 does
        (0, [3, 3, 1], ["e0", "e1"]),
    ],
)
def test_to_admit_takes_the_longest_prefix_that_fits(running, limits, admitted) -> None:
    queue = [Held(f"e{i}", limit) for i, limit in enumerate(limits)]
    assert to_admit(running, queue) == admitted


@dataclass
class Key:
    """One key as services/admission.py keeps it: created executions queue, and admission
    runs after every change (a start, an end), as the engine's triggers make it run."""

    limits: list[int]
    held: list[Held] = field(default_factory=list)
    running: list[str] = field(default_factory=list)
    started: list[str] = field(default_factory=list)
    cancelled: set[str] = field(default_factory=set)
    created: int = 0
    peak_over: list[tuple[int, int]] = field(default_factory=list)

    def admit(self) -> None:
        for execution_id in to_admit(len(self.running), self.held):
            (held,) = [h for h in self.held if h.execution_id == execution_id]
            if len(self.running) >= held.limit:
                self.peak_over.append((len(self.running) + 1, held.limit))
            self.held.remove(held)
            self.running.append(execution_id)
            self.started.append(execution_id)

    def start(self) -> None:
        limit = self.limits[self.created % len(self.limits)]
        self.held.append(Held(f"e{self.created:04d}", limit))
        self.created += 1
        self.admit()

    def end(self, pick: int) -> None:
        if self.running:
            self.running.pop(pick % len(self.running))
            self.admit()

    def cancel(self, pick: int) -> None:
        """A held one cancelled: it never started and frees nothing."""
        if self.held:
            self.cancelled.add(self.held.pop(pick % len(self.held)).execution_id)
            self.admit()


OPERATIONS = st.lists(
    st.tuples(st.sampled_from(["start", "start", "end", "cancel"]), st.integers(0, 50)),
    max_size=120,
)


def run(key: Key, operations: list[tuple[str, int]]) -> Key:
    for name, pick in operations:
        if name == "start":
            key.start()
        else:
            getattr(key, name)(pick)
    return key


@settings(max_examples=400, deadline=None)
@given(limit=st.integers(1, 5), operations=OPERATIONS)
def test_never_above_the_limit_and_first_in_first_out(limit, operations) -> None:
    key = Key([limit])
    for name, pick in operations:
        run(key, [(name, pick)])
        assert len(key.running) <= limit
        # Room and a queue at once never last past an admission: nobody waits for nothing.
        assert not (key.held and len(key.running) < limit)
    assert key.started == sorted(key.started), "started out of creation order"
    assert not key.peak_over


@settings(max_examples=400, deadline=None)
@given(
    limits=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    operations=OPERATIONS,
)
def test_nothing_starves_whatever_the_limits_of_the_versions(limits, operations) -> None:
    """Versions with other limits share the key: each still starts under its own, in
    order, and ending whatever runs eventually starts every execution not cancelled."""
    key = run(Key(limits), operations)
    assert not key.peak_over, "an execution started while its own limit was reached"
    assert key.started == sorted(key.started)
    for _ in range(key.created + 1):
        key.end(0)
    assert key.held == []
    created = {f"e{i:04d}" for i in range(key.created)}
    assert set(key.started) == created - key.cancelled


def test_why_a_held_execution_waits_is_its_key_on_every_node() -> None:
    definition = parse_definition(
        {
            "nodes": [
                {"id": "a", "type": "function", "function": "std.noop"},
                {"id": "b", "type": "function", "function": "std.noop", "depends_on": ["a"]},
            ],
            "concurrency": {"key": "{{ input.customer }}", "limit": 2},
        }
    )
    pending = ExecutionState("e")
    held = {CONCURRENCY: {"key": "acme", "limit": 2, "running": 2, "ahead": 3}}
    entries = why(definition, pending, Rows(extra=held))
    assert [e["node_id"] for e in entries] == ["a", "b"]
    for entry in entries:
        assert entry["reasons"] == [
            {
                "code": "concurrency_limit",
                "message": "the workflow's concurrency key 'acme' has 2 of 2 executions "
                "running; 3 waiting ahead of it (first in, first out)",
                "key": "acme",
                "limit": 2,
                "running": 2,
                "ahead": 3,
            }
        ]
    # Not held (a start_at not yet due): the timer is the reason, not the key.
    assert [r["code"] for r in why(definition, pending, Rows())[0]["reasons"]] == ["timer"]
