from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.engine import Engine


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/integration/" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture
def live(engine: Engine, django_db_blocker) -> Iterator[Engine]:
    with django_db_blocker.unblock():
        yield engine
