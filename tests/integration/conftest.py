from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from config.celery import app
from tests.integration.engine import Engine


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/integration/" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture
def live(engine: Engine, django_db_blocker) -> Iterator[Engine]:
    with django_db_blocker.unblock():
        yield engine


@pytest.fixture
def task_events(live: Engine) -> Iterator[list[dict[str, Any]]]:
    """Every task event the broker carries while the test runs."""
    seen: list[dict[str, Any]] = []
    ready = threading.Event()
    with app.connection_for_read() as connection:
        receiver = app.events.Receiver(connection, handlers={"*": seen.append})
        thread = threading.Thread(
            target=lambda: receiver.capture(limit=None, timeout=None, wakeup=False),
            daemon=True,
        )
        receiver.on_consume_ready = lambda *args, **kwargs: ready.set()
        thread.start()
        assert ready.wait(30), "the event receiver never started consuming"
        try:
            yield seen
        finally:
            receiver.should_stop = True
            thread.join(timeout=10)
