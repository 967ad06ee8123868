"""GET /healthz and GET /metrics, against the real database and broker."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone
from kombu import Connection
from rest_framework.test import APIClient

from executions.metrics import health
from executions.models import SweeperState
from executions.services.sweep import sweep
from tests.factories import start

pytestmark = pytest.mark.django_db

GAUGES = [
    "workflow_executions",
    "workflow_tasks",
    "workflow_attempts_running",
    "workflow_timers_pending",
    "workflow_oldest_unclaimed_attempt_age_seconds",
    "workflow_events_total",
    "workflow_schedules",
    "workflow_sweeper_last_sweep_age_seconds",
]

ONE_NODE = {"nodes": [{"id": "a", "type": "function", "function": "std.noop"}]}


def test_healthz_is_ok_and_anonymous() -> None:
    response = APIClient().get("/healthz")
    assert response.status_code == 200, response.content
    body = response.json()
    assert {k: body[k] for k in ("status", "database", "broker")} == {
        "status": "ok",
        "database": "ok",
        "broker": "ok",
    }
    assert body["sweeper"]["state"] in ("ok", "stale", "never")
    # A load balancer's probe carries no token; a stale one must not turn it into a 401.
    stale = APIClient(HTTP_AUTHORIZATION="Token not-a-token")
    assert stale.get("/healthz/").status_code == 200


def test_healthz_is_503_naming_the_broker_when_it_is_down(monkeypatch) -> None:
    # Nothing listens on port 1: the connection is refused at once.
    monkeypatch.setattr(
        "executions.metrics.health.broker_connection",
        lambda: Connection("redis://127.0.0.1:1/0", connect_timeout=0.5),
    )
    response = APIClient().get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["database"] == "ok"
    assert body["broker"] != "ok"
    assert "Error" in body["broker"]


def test_healthz_is_503_naming_the_database_when_it_fails(monkeypatch) -> None:
    def broken() -> None:
        raise RuntimeError("connection refused")

    monkeypatch.setitem(health.CHECKS, "database", broken)
    body = APIClient().get("/healthz").json()
    assert body["database"] == "RuntimeError: connection refused"
    assert body["broker"] == "ok"


def _sample(text: str, name: str, labels: str = "") -> float:
    match = re.search(rf"^{re.escape(name + labels)} (\S+)$", text, re.MULTILINE)
    assert match, f"no sample {name}{labels} in:\n{text}"
    return float(match.group(1))


def test_metrics_are_computed_from_the_database(api: APIClient) -> None:
    start(ONE_NODE)
    response = api.get("/metrics", HTTP_ACCEPT="text/plain;version=0.0.4")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    for name in GAUGES:
        assert f"# TYPE {name} " in text, name
    assert _sample(text, "workflow_executions", '{status="running"}') == 1
    assert _sample(text, "workflow_executions", '{status="failed"}') == 0
    assert _sample(text, "workflow_tasks", '{status="scheduled"}') == 1
    assert _sample(text, "workflow_events_total") == 2  # workflow_started, task_scheduled
    assert _sample(text, "workflow_oldest_unclaimed_attempt_age_seconds") >= 0
    assert _sample(text, "workflow_attempts_running") == 0
    assert _sample(text, "workflow_schedules", '{enabled="true"}') == 0


def test_metrics_need_a_token_unless_made_public() -> None:
    anonymous = APIClient()
    response = anonymous.get("/metrics")
    assert response.status_code == 401
    assert "detail" in response.json()
    with override_settings(WORKFLOW_METRICS_PUBLIC=True):
        assert anonymous.get("/metrics/").status_code == 200


def test_healthz_reports_the_sweeper_from_its_last_completed_sweep() -> None:
    """never before any sweep; ok right after one; stale once it is older than the limit,
    while the status code still answers for the database and the broker only."""
    SweeperState.objects.all().delete()
    body = APIClient().get("/healthz").json()
    assert body["sweeper"]["state"] == "never"
    assert body["sweeper"]["last_sweep_at"] is None

    sweep()
    body = APIClient().get("/healthz").json()
    assert body["sweeper"]["state"] == "ok"
    completed = SweeperState.objects.get().completed_at
    assert body["sweeper"]["last_sweep_at"] == completed.isoformat()

    SweeperState.objects.update(completed_at=completed - timedelta(minutes=5))
    with override_settings(WORKFLOW_SWEEPER_STALE_SECONDS=60):
        response = APIClient().get("/healthz")
    assert response.status_code == 200
    assert response.json()["sweeper"]["state"] == "stale"
    assert response.json()["sweeper"]["age_seconds"] >= 300
    assert response.json()["sweeper"]["stale_after_seconds"] == 60


def test_metrics_export_the_age_of_the_last_sweep(api: APIClient) -> None:
    SweeperState.objects.all().delete()
    text = api.get("/metrics").content.decode()
    assert _sample(text, "workflow_sweeper_last_sweep_age_seconds") == float("inf")
    sweep()
    SweeperState.objects.update(completed_at=timezone.now() - timedelta(seconds=90))
    text = api.get("/metrics").content.decode()
    assert 90 <= _sample(text, "workflow_sweeper_last_sweep_age_seconds") < 3600
