"""No input ever yields a 500: random JSON bodies and query strings at every write endpoint."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from executions.schedules.services import schedule_create
from tests.factories import make_version, start

pytestmark = pytest.mark.django_db

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
# Bodies that look like the real thing, with wrong values in the right places.
shaped = st.fixed_dictionaries(
    {},
    optional={
        "workflow": json_values | st.sampled_from(["fuzz", "1", 1]),
        "name": json_values,
        "definition": json_values,
        "input": json_values,
        "version": json_values,
        "start_at": json_values,
        "node_id": json_values,
        "from_node": json_values,
        "data": json_values,
        "comment": json_values,
        "cron": json_values,
        "timezone": json_values,
        "signal": json_values | st.fixed_dictionaries({"name": json_values}),
        "jitter_seconds": json_values,
        "start": json_values | st.sampled_from(["2026-03-01T00:00:00Z", "0001-01-01T00:00:00Z"]),
        "end": json_values | st.sampled_from(["2026-03-01T05:00:00Z", "9999-12-31T23:59:59Z"]),
    },
)
bodies = json_values | shaped

DEFINITION = {"nodes": [{"id": "review", "type": "approval"}]}


@pytest.fixture
def paths(db):
    version = make_version(DEFINITION, name="fuzz")
    execution = start(DEFINITION)
    base = f"/executions/{execution.pk}"
    schedule = schedule_create(workflow=version.workflow, cron="0 * * * *")
    return [
        "/workflows",
        f"/workflows/{version.workflow_id}/versions",
        "/executions",
        f"{base}/cancel",
        f"{base}/retry",
        f"{base}/replay",
        f"{base}/tasks/review/approve",
        f"{base}/tasks/review/reject",
        "/schedules",
        f"{base}/tasks/review/retry",
        f"{base}/tasks/review/fail",
        f"/schedules/{schedule.pk}/backfill",
    ]


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(body=bodies, which=st.integers(0, 11))
def test_random_bodies_never_500(api, paths, body, which) -> None:
    response = api.post(paths[which], body, format="json")
    assert response.status_code < 500, (paths[which], body, response.content[:300])


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(body=bodies, key=st.sampled_from(["k1", "k2"]))
def test_random_signal_with_start_bodies_never_500(api, paths, body, key) -> None:
    response = api.post("/executions", body, format="json", HTTP_IDEMPOTENCY_KEY=key)
    assert response.status_code < 500, (body, response.content[:300])


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    value=st.text(max_size=30),
    key=st.sampled_from(
        ["status", "workflow", "after_seq", "at_seq", "limit", "offset", "node_id"]
    ),
)
def test_random_query_strings_never_500(api, paths, value, key) -> None:
    execution_path = paths[3].rsplit("/", 1)[0]
    for path in (
        "/executions",
        "/workflows",
        "/schedules",
        f"{execution_path}/events",
        f"{execution_path}/state",
        f"{execution_path}/tasks",
    ):
        response = api.get(path, {key: value})
        assert response.status_code < 500, (path, key, value, response.content[:300])


def test_raw_garbage_bodies_are_4xx(api, paths) -> None:
    nul = b'{"workflow": "fuzz", "input": {"a": "x\\u0000y"}}'
    for raw in (b"{", b"\xff\xfe", b"[" * 5000 + b"]" * 5000, b'{"a": NaN}', b"", nul):
        response = api.generic("POST", "/executions", raw, content_type="application/json")
        assert 400 <= response.status_code < 500, (raw[:20], response.status_code)


def test_nul_characters_are_400_on_every_backend(api, paths) -> None:
    # SQLite can search for it (finding nothing); PostgreSQL refuses it: never a 500.
    assert api.get("/executions", {"workflow": "a\x00b"}).status_code in (200, 400)
    body = {"workflow": "fuzz", "input": {"k": "a\x00b"}}
    response = api.post("/executions", body, format="json")
    assert response.status_code == 400
    assert "input.k" in response.json()["input"][0]
    execution_path = paths[3].rsplit("/", 1)[0]
    assert api.get(f"{execution_path}/tasks/a%00b").status_code in (400, 404)


def test_unpaired_surrogates_are_400_naming_where_on_every_backend(api) -> None:
    """JSON may spell a lone surrogate ("\\ud800"); PostgreSQL's jsonb refuses it. Refused at
    the door with the path, as NUL is; a proper pair (an emoji) is taken."""
    for raw in (b'{"workflow": "fuzz", "input": {"k": "a\\ud800b"}}',
                b'{"workflow": "fuzz", "input": {"\\udfff": 1}}'):  # fmt: skip
        response = api.generic("POST", "/executions", raw, content_type="application/json")
        assert response.status_code == 400, response.content
        (message,) = response.json()["input"]
        assert "unpaired surrogates" in message
        assert "(at input." in message
    paired = b'{"workflow": "no-such-workflow", "input": {"k": "\\ud83d\\ude00"}}'
    response = api.generic("POST", "/executions", paired, content_type="application/json")
    assert "surrogate" not in response.content.decode()
