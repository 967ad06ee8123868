from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from pytest_django import DjangoDbBlocker

from tests.ci import IN_CI

if TYPE_CHECKING:
    from tests.integration.engine import Engine


# Loaded here, before any test module is imported: a test's @settings(...) takes what it
# does not set from the profile loaded when it is decorated.
hypothesis_settings.register_profile(
    "ci",
    # The same examples on every run (no example database either): a red CI run is red
    # again when re-run, and a green one did not get lucky. A failure prints its blob
    # (@reproduce_failure) so a developer replays it at once.
    derandomize=True,
    print_blob=True,
    # A loaded CI machine is no measure of a test's speed: neither the deadline nor the
    # too-slow health check may fail a run there.
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
hypothesis_settings.load_profile("ci" if IN_CI else "default")


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user(username="operator", password="pw-operator")


@pytest.fixture
def api(user):
    """An API client authenticated with a DRF token, as a real client would be."""
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "tampered: the test alters a log on purpose; skip the end-of-test replay check"
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """After pytest-django's sort: no transactional test's flush may come after a test
    whose executions the live engine may still be advancing (tests/flush.py)."""
    from tests.flush import assert_flushes_come_first

    assert_flushes_come_first(items)


@pytest.fixture(scope="session", autouse=True)
def flush_keeps_the_engine() -> Iterator[None]:
    """Every transactional test ends with tests/flush.py's flush, not Django's: the live
    engine keeps its own rows through it."""
    from django.core.management.commands import flush as django_flush

    from tests.flush import Command

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(django_flush, "Command", Command)
        yield


#: The live engine's rows just before a transactional test's flush, and the blocker to
#: read them again after it (pytest-django blocks the database once the test is over).
ENGINE_ROWS_BEFORE_FLUSH = pytest.StashKey[tuple[DjangoDbBlocker, set[str]]]()


@pytest.fixture(autouse=True)
def engine_rows_outlive_the_flush(
    request: pytest.FixtureRequest, django_db_blocker: DjangoDbBlocker
) -> Iterator[None]:
    """Each transactional test proves tests/flush.py: the engine's rows seen before its
    flush (the beat's entries, the sweeper's record) are all there, the same rows, after
    it (pytest_runtest_teardown below checks, once the flush has run), and no schedule's
    beat entry is."""
    from tests.flush import engine_rows, flushes

    if not flushes(request.node):
        yield
        return
    # Set up before this fixture, pytest-django's test case is torn down (flushed) after.
    request.getfixturevalue("transactional_db")
    yield
    request.node.stash[ENGINE_ROWS_BEFORE_FLUSH] = (django_db_blocker, engine_rows())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    yield
    seen = item.stash.get(ENGINE_ROWS_BEFORE_FLUSH, None)
    # After the last test the session is over too: no engine, no test database.
    if seen is None or nextitem is None:
        return
    from tests.flush import assert_kept

    blocker, before = seen
    with blocker.unblock():
        assert_kept(before)


@pytest.fixture(autouse=True)
def every_execution_replays(request: pytest.FixtureRequest):
    """After each database test, every execution it created must pass `--verify` and
    match its projections: the suite checks determinism on everything it runs.

    The test's own only (created since it began): what earlier tests left was theirs to
    check, and the cost follows the test, not the length of the run. One it left running
    is checked too, as far as it has got, on one snapshot of the database: an execution's
    events and projections are written in one transaction, so they agree in any snapshot,
    whatever the workers append meanwhile.
    """
    from django.utils import timezone

    since = timezone.now()
    yield
    uses_db = request.node.get_closest_marker("django_db") is not None or bool(
        {"db", "transactional_db"} & set(request.fixturenames)
    )
    if not uses_db or request.node.get_closest_marker("tampered"):
        return
    from executions.models import Execution
    from tests.integration.engine import assert_replayable
    from tests.snapshot import one_snapshot

    with one_snapshot():
        for execution in Execution.objects.filter(created_at__gte=since):
            assert_replayable(execution)


@pytest.fixture(autouse=True)
def fresh_definition_cache():
    """Parsed definitions are cached by version id. A rolled-back test can hand its id to
    the next test's version (SQLite reuses rolled-back ids), so start each test afresh."""
    from executions.definitions import clear_cache

    clear_cache()


@pytest.fixture(scope="session")
def engine(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Engine]:
    """One worker (2 processes) and one beat for the whole session, on the test database.

    Defined here, once for every directory that uses it (integration, browser): a second
    definition of a session fixture is a second engine, whose workers would take the
    other's messages (a test's own worker setup, and its functions, then never see them).

    Integration tests commit for real (the workers must see their rows) and are never
    rolled back or flushed: each test makes its own uniquely named workflows.
    """
    from django.db import connection

    from tests.integration.engine import Engine

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
