"""The chaos run's limit checks must see an overlap when there is one (else a run that
exceeded a limit would pass)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.chaos.limits import Interval, max_overlap, out_of_order, over_limit

T0 = datetime(2026, 11, 30, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_handing_a_slot_on_at_the_same_instant_is_not_an_overlap() -> None:
    assert max_overlap([(at(0), at(1)), (at(1), at(2))]) == (1, at(0))


def test_an_overlap_is_counted_where_it_starts() -> None:
    intervals = [(at(0), at(3)), (at(1), at(2)), (at(1.5), None), (at(4), at(5))]
    assert max_overlap(intervals) == (3, at(1.5))


def test_an_open_interval_holds_its_slot_to_the_end() -> None:
    assert max_overlap([(at(0), None), (at(10), at(11))]) == (2, at(10))


def test_over_limit_names_the_group_and_the_peak() -> None:
    groups: dict[str, list[Interval]] = {
        "g0": [(at(0), at(2)), (at(1), at(3))],
        "g1": [(at(0), at(1)), (at(1), at(2))],
    }
    assert over_limit(groups, 1, "key") == [f"key 'g0': 2 at once at {at(1)} (limit 1)"]
    assert over_limit(groups, 2, "key") == []


def test_fifo_is_broken_when_a_later_one_is_let_in_first() -> None:
    assert out_of_order({"g": [(1, at(0)), (2, at(1)), (3, at(2))]}) == []
    problems = out_of_order({"g": [(1, at(0)), (2, at(5)), (3, at(2))]})
    assert problems == ["key 'g': created #2 was let in before #1 (3 executions)"]
