from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

from tests.integration.engine import Engine


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/integration/" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def engine(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Engine]:
    """One worker (2 processes) and one beat for the whole session, on the test database.

    Integration tests commit for real (the workers must see their rows) and are never
    rolled back or flushed: each test makes its own uniquely named workflows.
    """
    running = Engine(log_dir=tmp_path_factory.mktemp("celery"))
    with django_db_blocker.unblock():
        # pytest-django only creates the test database for tests marked django_db; the
        # integration tests are not (they must commit), so create it here if needed.
        created = None
        if not Path(connection.settings_dict["NAME"]).name.startswith("test_"):
            created = connection.settings_dict["NAME"]
            connection.creation.create_test_db(verbosity=0, autoclobber=True)
        running.start()
        try:
            yield running
        finally:
            running.stop()
            if created is not None:
                connection.creation.destroy_test_db(created, verbosity=0)


@pytest.fixture
def live(engine: Engine, django_db_blocker) -> Iterator[Engine]:
    with django_db_blocker.unblock():
        yield engine
