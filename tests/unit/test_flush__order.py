"""Which tests flush the database at their end, and the order the run holds them to
(tests/flush.py): no flush after a test whose executions the live engine may still be
advancing."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from tests.flush import assert_flushes_come_first, flushes, leaves_rows_to_the_engine


@dataclass
class Item:
    """What the checks read of a collected test."""

    nodeid: str
    fixturenames: list[str] = field(default_factory=list)
    django_db: pytest.Mark | None = None

    def get_closest_marker(self, name: str) -> pytest.Mark | None:
        return self.django_db if name == "django_db" else None


def db(*args: object, **kwargs: object) -> pytest.Mark:
    return pytest.mark.django_db(*args, **kwargs).mark


BROWSER = Item("browser", ["live_server", "engine"], db(transaction=True))
INTEGRATION = Item("integration", ["live", "engine"])
ROLLED_BACK = Item("rolled-back", ["db", "engine"])


@pytest.mark.parametrize(
    ("item", "flushed"),
    [
        (Item("t", [], db(transaction=True)), True),
        (Item("t", [], db(True)), True),
        (Item("t", [], db(reset_sequences=True, transaction=True)), True),
        (Item("t", ["live_server"]), True),
        (Item("t", ["transactional_db"]), True),
        (Item("t", [], db()), False),
        (Item("t", [], db(transaction=False)), False),
        (Item("t", ["db"]), False),
        (INTEGRATION, False),
    ],
)
def test_which_tests_flush(item: Item, flushed: bool) -> None:
    assert flushes(item) is flushed  # type: ignore[arg-type]


def test_only_a_test_outside_pytest_djangos_database_leaves_rows_to_the_engine() -> None:
    assert leaves_rows_to_the_engine(INTEGRATION)  # type: ignore[arg-type]
    assert not leaves_rows_to_the_engine(BROWSER)  # type: ignore[arg-type]
    assert not leaves_rows_to_the_engine(ROLLED_BACK)  # type: ignore[arg-type]
    assert not leaves_rows_to_the_engine(Item("unit"))  # type: ignore[arg-type]


def test_flushes_before_the_integration_tests_are_the_order_kept() -> None:
    assert_flushes_come_first([ROLLED_BACK, BROWSER, BROWSER, INTEGRATION])  # type: ignore[list-item]
    assert_flushes_come_first([INTEGRATION, INTEGRATION])  # type: ignore[list-item]
    assert_flushes_come_first([])


def test_a_flush_after_an_integration_test_is_refused_naming_both() -> None:
    with pytest.raises(pytest.UsageError, match=r"browser flushes .*'integration'"):
        assert_flushes_come_first([BROWSER, INTEGRATION, BROWSER])  # type: ignore[list-item]
