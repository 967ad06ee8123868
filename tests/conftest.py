from __future__ import annotations

import pytest


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


@pytest.fixture(autouse=True)
def every_execution_replays(request: pytest.FixtureRequest):
    """After each database test, every execution it produced must pass `--verify` and
    match its projections: the suite checks determinism on everything it runs."""
    yield
    uses_db = request.node.get_closest_marker("django_db") is not None or bool(
        {"db", "transactional_db"} & set(request.fixturenames)
    )
    if not uses_db or request.node.get_closest_marker("tampered"):
        return
    from executions.models import Execution
    from tests.integration.engine import assert_replayable

    for execution in Execution.objects.all():
        assert_replayable(execution)


@pytest.fixture(autouse=True)
def fresh_definition_cache():
    """Parsed definitions are cached by version id. A rolled-back test can hand its id to
    the next test's version (SQLite reuses rolled-back ids), so start each test afresh."""
    from executions.definitions import clear_cache

    clear_cache()
