"""The engine's API inside a host project (tests/host/): with no WORKFLOW_ setting at all
it works on its defaults, and the host's own REST_FRAMEWORK defaults (IsAuthenticated,
page-number pages of 3, an exception handler of its own, session authentication only)
change nothing of the engine's API, while the host's own DRF view keeps them.

The engine's side is checked twice: here, with the host's settings put over the test
settings, and in a process started on the host's settings (tests/host/api_probe.py), the
only place where the host's own view has the host's defaults (DRF reads REST_FRAMEWORK into
its view classes when they are imported)."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
from django.test import override_settings
from django.urls import URLPattern

from tests.host.api_probe import ECHO, observe
from tests.host.overrides import without_engine_settings
from tests.host.process import run_probe
from tests.host.settings import REST_FRAMEWORK as HOST_REST_FRAMEWORK
from workflows import urls
from workflows.conf import engine_settings
from workflows.rest.views import EngineAccess

pytestmark = pytest.mark.django_db


@cache
def in_the_host() -> dict[str, Any]:
    return run_probe("tests.host.api_probe")


@pytest.fixture
def over_the_test_settings() -> dict[str, Any]:
    """The same observations here, with the host's REST_FRAMEWORK and URLconf."""
    with override_settings(REST_FRAMEWORK=HOST_REST_FRAMEWORK, ROOT_URLCONF="tests.host.urls"):
        return observe()


@pytest.fixture(params=["over the test settings", "in the host's own process"])
def seen(request: pytest.FixtureRequest) -> dict[str, Any]:
    if request.param == "over the test settings":
        observed: dict[str, Any] = request.getfixturevalue("over_the_test_settings")
        return observed
    return in_the_host()


def test_a_logged_in_user_without_the_engine_s_permissions_gets_403(seen) -> None:
    for path, answer in seen["member"].items():
        assert answer["status"] == 403, (path, answer)
        # The engine's error body, not the host's exception handler's.
        assert set(answer["body"]) == {"detail"}, answer
        assert "needs the permission" in answer["body"]["detail"]
    assert seen["member_post"]["status"] == 403


def test_an_anonymous_request_gets_the_engine_s_401(seen) -> None:
    anonymous = seen["anonymous"]
    assert anonymous["status"] == 401
    assert anonymous["www_authenticate"].startswith("Token")
    assert set(anonymous["body"]) == {"detail"}


def test_token_authentication_pagination_parsers_and_errors_are_the_engine_s(seen) -> None:
    page = seen["page"]
    assert page["status"] == 200
    # limit/offset pages of 50 with a count, not the host's page-number pages of 3.
    assert page["body"]["count"] == 5
    assert len(page["body"]["results"]) == 5
    assert seen["page_of_2"]["body"]["next"].endswith("/engine/workflows?limit=2&offset=2")
    bad = seen["bad_limit"]
    assert bad["status"] == 400
    assert bad["body"]["limit"] == ["'many' is not a whole number from 1 to 500."]
    assert "host_error" not in bad["body"]
    assert seen["missing"]["status"] == 404
    assert set(seen["missing"]["body"]) == {"detail"}
    # JSON only, whatever the host's parsers.
    assert seen["form"]["status"] == 415


def test_an_execution_runs_to_its_end(seen) -> None:
    assert seen["started"]["status"] == 201, seen["started"]
    assert seen["ran"]["body"]["status"] == "succeeded", seen["ran"]
    assert seen["ran"]["body"]["output"] == {"a": 7}


def test_the_schema_and_docs_are_the_engine_s_under_the_prefix(seen) -> None:
    assert seen["schema"]["status"] == 200, seen["schema"]
    document = seen["schema"]["body"]
    assert document["info"]["title"] == "Workflow engine API"
    paths = set(document["paths"])
    assert {"/engine/executions", "/engine/workflows", "/engine/healthz"} <= paths
    # The host's own API is not the engine's to document.
    assert not [path for path in paths if not path.startswith("/engine/")], paths
    assert "ExecutionStatusEnum" in document["components"]["schemas"]
    assert seen["docs"]["status"] == 200


def test_the_host_s_own_view_keeps_the_host_s_defaults() -> None:
    shop = in_the_host()["shop"]
    # IsAuthenticated with session authentication only: anonymous is refused in the
    # host's own error shape, and a token (the engine's authentication) counts for nothing.
    assert shop["anonymous"]["status"] == 403
    assert set(shop["anonymous"]["body"]) == {"host_error"}
    assert shop["token"]["status"] == 403
    session = shop["session"]
    assert session["status"] == 200
    # Page-number pages of 3.
    assert len(session["body"]["results"]) == 3
    assert session["body"]["next"].endswith("/shop/teams?page=2")


def test_the_api_works_with_no_engine_setting_at_all(api, django_capture_on_commit_callbacks):
    with without_engine_settings():
        assert engine_settings.FUNCTION_MODULES == []
        created = api.post("/workflows", {"name": "bare", "definition": ECHO}, format="json")
        assert created.status_code == 201, created.content
        with django_capture_on_commit_callbacks(execute=True) as sent:
            started = api.post("/executions", {"workflow": "bare", "input": 7}, format="json")
        assert started.status_code == 201, started.content
        assert sent, "the attempt's message goes out on commit"


def test_every_engine_route_is_answered_by_an_engine_view() -> None:
    """Each carries the engine's DRF settings (workflows/rest/views.py)."""
    for pattern in urls.urlpatterns:
        assert isinstance(pattern, URLPattern), pattern
        view = pattern.callback.view_class  # type: ignore[attr-defined]
        assert issubclass(view, EngineAccess), (pattern, view)
