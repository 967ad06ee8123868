"""POST /executions with `faults`: refused with 400 unless WORKFLOW_FAULT_INJECTION=1,
validated, and recorded in workflow_started (no workers: what the API does)."""

from __future__ import annotations

import pytest

from executions.engine.faults import faults_for
from executions.models import Event
from tests.factories import make_version

pytestmark = pytest.mark.django_db

DEFINITION = {"nodes": [{"id": "work", "type": "function", "function": "std.echo"}]}


def post(api, faults, **extra):
    version = make_version(DEFINITION)
    body = {"workflow": version.workflow.name, "faults": faults, **extra}
    return api.post("/executions", body, format="json")


def test_faults_are_refused_unless_the_server_allows_them(api, settings) -> None:
    settings.WORKFLOW_FAULT_INJECTION = False
    refused = post(api, {"duplicate_delivery": 0.5})
    assert refused.status_code == 400
    assert "WORKFLOW_FAULT_INJECTION=1" in refused.json()["detail"]
    assert "faults" in refused.json()


def test_allowed_faults_are_recorded_where_the_execution_starts(api, settings) -> None:
    settings.WORKFLOW_FAULT_INJECTION = True
    faults = {"duplicate_delivery": 1, "crash_after_effect": 0.25, "delay_result_seconds": 2}
    created = post(api, faults)
    assert created.status_code == 201, created.content
    execution_id = created.json()["id"]
    started = Event.objects.get(execution_id=execution_id, type="workflow_started")
    assert started.data["faults"] == {**faults, "seed": 0}
    injected = Event.objects.filter(execution_id=execution_id, type="fault_injected")
    expected = [f.fault for f in faults_for({**faults, "seed": 0}, "work", 1)]
    assert [e.data["fault"] for e in injected.order_by("seq")] == expected
    assert "delay_result" in expected
    plain = post(api, None)
    assert plain.status_code == 400  # faults: null is not a faults object


@pytest.mark.parametrize(
    ("faults", "extra", "field"),
    [
        ({"duplicate_delivery": 1.5}, {}, "duplicate_delivery"),
        ({"crash_after_effect": -0.1}, {}, "crash_after_effect"),
        ({"delay_result_seconds": 10_000}, {}, "delay_result_seconds"),
        ({"seed": -1}, {}, "seed"),
        ({"seed": "x"}, {}, "seed"),
        ({"duplicate_delivery": 0.5}, {"start_at": "2027-01-01T00:00:00Z"}, "faults"),
    ],
)
def test_bad_faults_are_400_naming_the_field(api, settings, faults, extra, field) -> None:
    settings.WORKFLOW_FAULT_INJECTION = True
    refused = post(api, faults, **extra)
    assert refused.status_code == 400, refused.content
    assert field in str(refused.json())
