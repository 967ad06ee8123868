"""Every query parameter /schema documents is parsed to exactly what it says: a value the
schema calls invalid (a date-time that is not RFC 3339, a value outside an enum, an empty
value, a number out of range) is a 400 whose "detail" names the parameter, never a 200
with the filter ignored and never a 500."""

from __future__ import annotations

import pytest

from executions.models import Execution
from tests.factories import start
from workflows.rest.parsers import parse_date_time

pytestmark = pytest.mark.django_db

DEFINITION = {"nodes": [{"id": "review", "type": "approval"}]}

#: Not RFC 3339 date-times, though ISO 8601 (and so Django) takes most of them.
NOT_DATE_TIMES = [
    "",
    " ",
    "soon",
    "2030-01-01",
    "2030-01-01T09:00:00",
    "2030-01-01T09:00",
    "2030-01-01 09:00:00Z",
    "2030-01-01T09:00:00+0200",
    "2030-01-01T09:00:00+02",
    "20300101T090000Z",
    "2030-01-01T09:00:00.Z",
    "2030-13-01T09:00:00Z",
    "2030-02-30T09:00:00Z",
    "2030-01-01T24:00:00Z",
    "2030-01-01T09:00:00+24:00",
    "٢٠٣٠-01-01T09:00:00Z",
    "2030-01-01T09:00:00Z\n",
    "20%30-01-01T09:00:00Z",
    "%s %(x)s",
    "9" * 5000,
]
#: RFC 3339 date-times: each is a filter, not an error.
DATE_TIMES = [
    "2999-01-01T09:00:00Z",
    "2999-01-01t09:00:00z",
    "1999-01-01T09:00:00.123456789+02:00",
    "2016-12-31T23:59:60Z",
    "1655-08-15T08:27:13-18:08",
]


@pytest.fixture
def execution(db) -> Execution:
    return start(DEFINITION)


def _path(path: str, execution: Execution) -> str:
    return path.format(execution_id=execution.pk, workflow_id=execution.workflow_id)


#: (GET path, parameter, values /schema calls invalid). The test below it checks that
#: these are all the query parameters /schema documents for the API's operations.
TABLE: list[tuple[str, str, list[str]]] = [
    ("/executions", "created_after", NOT_DATE_TIMES),
    ("/executions", "created_before", NOT_DATE_TIMES),
    ("/executions", "status", ["", "RUNNING", "running ", "x"]),
    ("/executions", "has_failed_nodes", ["", "True", "1", "yes", "maybe"]),
    ("/executions", "workflow", ["", "w" * 101]),
    ("/executions", "tag", ["", "team", ":billing", "k" * 129 + ":v", "team:" + "v" * 129]),
    ("/executions/{execution_id}/events", "node_id", ["", "n" * 81]),
    ("/executions/{execution_id}/events", "wait", ["", "x", "31", "-1"]),
    ("/executions/{execution_id}/events", "after_seq", ["", "x", "-1", str(2**31)]),
    ("/executions/{execution_id}/state", "at_seq", ["", "x", "-1", "1.0"]),
    *(
        (path, name, ["", "x", "-1", "1.5", "٣"] + (["0"] if name == "limit" else []))
        for path in (
            "/executions",
            "/executions/{execution_id}/events",
            "/executions/{execution_id}/tasks",
            "/workflows",
            "/workflows/{workflow_id}/versions",
            "/schedules",
            "/triggers",
            "/pools",
        )
        for name in ("limit", "offset")
    ),
]


def test_the_table_holds_every_query_parameter_the_schema_documents(api) -> None:
    schema = api.get("/schema", {"format": "json"}).json()
    documented = {
        (path, parameter["name"])
        for path, item in schema["paths"].items()
        if path != "/schema"  # drf-spectacular's own view: format and lang of the document
        for operation in item.values()
        for parameter in operation.get("parameters", [])
        if parameter["in"] == "query"
    }
    assert documented == {(path, name) for path, name, _ in TABLE}


@pytest.mark.parametrize(("path", "name", "values"), TABLE, ids=[f"{p} {n}" for p, n, _ in TABLE])
def test_a_value_the_schema_calls_invalid_is_a_400_naming_the_parameter(
    api, execution, path, name, values
) -> None:
    wrong = []
    for raw in values:
        response = api.get(_path(path, execution), {name: raw})
        body = response.json()
        named = response.status_code == 400 and body.get(name) and f"{name}:" in body["detail"]
        if not named:
            wrong.append((raw[:40], response.status_code, response.content[:200]))
    assert not wrong, wrong


def test_a_date_time_400_says_what_is_wrong(api, execution) -> None:
    for raw in NOT_DATE_TIMES[2:15]:
        detail = api.get("/executions", {"created_before": raw}).json()["detail"]
        assert "RFC 3339" in detail or "out of range" in detail, (raw, detail)


@pytest.mark.parametrize("name", ["created_after", "created_before"])
def test_every_rfc_3339_date_time_is_a_filter(api, execution, name) -> None:
    for raw in DATE_TIMES:
        response = api.get("/executions", {name: raw})
        assert response.status_code == 200, (raw, response.content[:300])
        found = str(execution.pk) in {row["id"] for row in response.json()["results"]}
        created_later = parse_date_time(raw) <= execution.created_at
        assert found is (created_later if name == "created_after" else not created_later), raw


def test_date_time_body_fields_are_rfc_3339_too(api, execution) -> None:
    for raw in ["2030-01-01", "2030-01-01T09:00:00", "2030-01-01T09:00:00+0200"]:
        filter = {"filter": {"created_after": raw}}
        bulk = api.post("/executions/bulk/cancel", filter, format="json")
        assert bulk.status_code == 400, bulk.content[:300]
        assert "RFC 3339" in bulk.json()["filter"]["created_after"][0]
        started = api.post("/executions", {"workflow": "wf", "start_at": raw}, format="json")
        assert started.status_code == 400, started.content[:300]
        assert "RFC 3339" in started.json()["start_at"][0]
