"""Testing a workflow function's idempotency with fault injection: the example the testing
page points to, written as a user of the engine would write it for their own function.

The server under test runs with WORKFLOW_FAULT_INJECTION=1. The execution asks for every
attempt's message to be delivered twice, for some attempts to crash after their effect
and before their result is recorded, and for results to be recorded late; which attempts
are hit follows from the seed, so a failing run fails the same way every time. The
function's effect (a ledger entry) must still happen once per idempotency key."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from executions.engine.faults import CRASH_AFTER_EFFECT, draw
from executions.models import Event
from tests import fault_functions  # noqa: F401  (registers test.ledger_charge here too)
from tests.integration.engine import Engine, assert_replayable

CHARGE = {
    "nodes": [
        {
            "id": "charge",
            "type": "function",
            "function": "test.ledger_charge",
            "input": {"ledger": "{{ input.ledger }}", "amount": 42},
            "retry_policy": {"max_attempts": 5, "initial_interval_seconds": 0.2},
        }
    ]
}


def crashing_first(probability: float, node_id: str = "charge") -> int:
    """A seed under which the first attempt crashes and the second does not."""
    return next(
        seed
        for seed in range(10_000)
        if draw(seed, CRASH_AFTER_EFFECT, node_id, 1) < probability
        and draw(seed, CRASH_AFTER_EFFECT, node_id, 2) >= probability
    )


@contextmanager
def faulty_server(live: Engine, settings) -> Iterator[APIClient]:
    """The API with fault injection on (the workers know test.ledger_charge: the test
    settings register tests.fault_functions)."""
    settings.WORKFLOW_FAULT_INJECTION = True
    name = f"faults-{uuid.uuid4().hex[:8]}"
    user = get_user_model().objects.create_superuser(name, f"{name}@example.com", "pw")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    yield client


def test_the_charge_happens_once_per_idempotency_key(live: Engine, settings, tmp_path) -> None:
    with faulty_server(live, settings) as api:
        workflow = f"charge-{uuid.uuid4().hex[:8]}"
        api.post("/workflows", {"name": workflow, "definition": CHARGE}, format="json")
        faults = {
            "duplicate_delivery": 1.0,
            "crash_after_effect": 0.5,
            "delay_result_seconds": 0.5,
            "seed": crashing_first(0.5),
        }
        body = {"workflow": workflow, "input": {"ledger": str(tmp_path)}, "faults": faults}
        started = api.post("/executions", body, format="json")
        assert started.status_code == 201, started.content
        done = live.wait(started.json()["id"], timeout=60)

    assert done.status == "succeeded"
    # The function ran twice (the first run crashed after its effect) ...
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert [line.split()[-1] for line in calls] == ["1", "2"]
    # ... and charged once: one ledger entry for the one idempotency key.
    entries = [p for p in Path(tmp_path).iterdir() if p.name != "calls.log"]
    assert len(entries) == 1
    assert done.output == {"charge": {"charged": 42, "repeat": True}}

    # Every fault is in the log, and the log replays as recorded.
    injected = Event.objects.filter(execution=done, type="fault_injected").order_by("seq")
    assert [(e.attempt, e.data["fault"]) for e in injected] == [
        (1, "duplicate_delivery"),
        (1, "crash_after_effect"),
        (1, "delay_result"),
        (2, "duplicate_delivery"),
        (2, "delay_result"),
    ]
    timed_out = Event.objects.get(execution=done, type="task_timed_out")
    assert timed_out.attempt == 1
    # Each attempt started once, though each message was delivered twice.
    started_attempts = Event.objects.filter(execution=done, type="task_started")
    assert sorted(e.attempt for e in started_attempts) == [1, 2]
    assert_replayable(done)
    call_command("verify_logs", str(done.pk))


@pytest.mark.parametrize("value", [{"seed": 1}, {"crash_after_effect": 0.5}])
def test_faults_are_refused_where_injection_is_off(live: Engine, settings, value) -> None:
    settings.WORKFLOW_FAULT_INJECTION = False
    name = f"faults-{uuid.uuid4().hex[:8]}"
    user = get_user_model().objects.create_superuser(name, f"{name}@example.com", "pw")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    api.post("/workflows", {"name": name, "definition": CHARGE}, format="json")
    body = {"workflow": name, "input": {"ledger": "/nowhere"}, "faults": value}
    refused = api.post("/executions", body, format="json")
    assert refused.status_code == 400
    assert "WORKFLOW_FAULT_INJECTION=1" in refused.json()["detail"]
