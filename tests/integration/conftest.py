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
    """The session's engine, handed back as the test found it: a test that kills or stops
    processes restores them itself (in a finally), and this restores what a failing one
    left (a worker started, not yet killed; a beat stopped)."""
    with django_db_blocker.unblock():
        workers, beat = len(engine.workers), engine.beat is not None
        yield engine
        restore(engine, workers=workers, beat=beat)


def restore(engine: Engine, *, workers: int, beat: bool) -> None:
    """`workers` worker processes (the newest extra ones killed) and the beat if it ran."""
    while len(engine.workers) > workers:
        engine.kill_worker(engine.workers[-1])
    while len(engine.workers) < workers:
        engine.start_worker()
    if beat and engine.beat is None:
        engine.start_beat()


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
