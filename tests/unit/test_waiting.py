"""tests/waiting.py, which every wait in the suite goes through: it returns what the
predicate found, fails naming what never happened, and gives a slow machine its factor."""

from __future__ import annotations

import itertools

import pytest

from tests.waiting import SLOWDOWN, eventually, scaled, slowdown


def test_it_returns_the_first_truthy_value_the_predicate_gives() -> None:
    answers = iter([None, [], 0, ["row"]])
    assert eventually(lambda: next(answers), 5, "a row", interval=0) == ["row"]


def test_an_exception_counts_as_not_yet() -> None:
    calls = itertools.count()

    def flaky() -> str:
        if next(calls) < 2:
            raise LookupError("not written yet")
        return "written"

    assert eventually(flaky, 5, "the row", interval=0) == "written"


def test_a_timeout_names_what_never_happened_and_the_last_value_seen() -> None:
    with pytest.raises(AssertionError, match=r"timed out after 0.05s: the nap never ended") as info:
        eventually(lambda: [], 0.05, "the nap never ended")
    assert "last was []" in str(info.value)


def test_a_timeout_after_an_exception_says_so_and_chains_it() -> None:
    def missing() -> None:
        raise LookupError("no such row")

    with pytest.raises(AssertionError, match="last raised LookupError") as info:
        eventually(missing, 0.05, "the row")
    assert isinstance(info.value.__cause__, LookupError)


def test_a_description_that_is_a_function_is_built_only_on_failure() -> None:
    built: list[str] = []

    def describe() -> str:
        built.append("logs")
        return "the workers' logs"

    assert eventually(lambda: True, 1, describe)
    assert built == []
    with pytest.raises(AssertionError, match="the workers' logs"):
        eventually(lambda: False, 0.05, describe)
    assert built == ["logs"]


def test_the_predicate_gets_a_last_look_at_the_deadline() -> None:
    looks: list[int] = []
    with pytest.raises(AssertionError):
        eventually(lambda: looks.append(1), 0.05, "nothing", interval=10)
    assert len(looks) == 2  # the first, then one at the deadline however long the interval


def test_the_slowdown_factor_scales_every_timeout(monkeypatch) -> None:
    monkeypatch.delenv(SLOWDOWN, raising=False)
    assert slowdown() == 1.0
    monkeypatch.setenv(SLOWDOWN, "3")
    assert scaled(2.0) == 6.0
    with pytest.raises(AssertionError, match=r"timed out after 0.15s"):
        eventually(lambda: False, 0.05, "it")


@pytest.mark.parametrize("raw", ["fast", "0", "-2", "nan"])
def test_a_factor_that_is_no_positive_number_is_refused_with_the_fix(monkeypatch, raw) -> None:
    monkeypatch.setenv(SLOWDOWN, raw)
    with pytest.raises(ValueError, match=SLOWDOWN):
        slowdown()
