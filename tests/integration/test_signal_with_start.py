"""Signal-with-start on real workers: ten clients race POST /executions with one
Idempotency-Key and a signal each (threads, each with its own database connection and
real transactions). One execution is started (one 201, nine 200), all ten signals are
recorded, and each is delivered: ten signal nodes, one per signal, none lost."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection
from rest_framework.test import APIClient

from executions.models import Execution
from tests.factories import events, make_version, timeline
from tests.integration.engine import assert_replayable

CLIENTS = 10

#: Ten signal nodes waiting for "order", each taking one signal; the output lists them.
DEFINITION = {
    "nodes": [
        {
            "id": "orders",
            "type": "map",
            "items": "input.slots",
            "max_parallel": CLIENTS,
            "node": {"type": "signal", "signal": "order"},
        }
    ]
}


def test_ten_clients_racing_on_one_key_start_one_execution_and_lose_no_signal(live) -> None:
    version = make_version(DEFINITION)
    user = get_user_model().objects.create_superuser(f"op-{uuid.uuid4().hex[:8]}")
    key = f"order-{uuid.uuid4().hex}"
    ready = threading.Barrier(CLIENTS)

    def client(number: int) -> tuple[int, dict[str, Any]]:
        api = APIClient()
        api.force_authenticate(user)
        body = {
            "workflow": version.workflow.name,
            "input": {"slots": list(range(CLIENTS))},
            "signal": {"name": "order", "data": {"client": number}},
        }
        try:
            ready.wait(30)
            answer = api.post("/executions", body, format="json", HTTP_IDEMPOTENCY_KEY=key)
            return answer.status_code, answer.json()
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        answers = list(pool.map(client, range(CLIENTS)))
    codes = sorted(code for code, _ in answers)
    assert codes == [200] * (CLIENTS - 1) + [201], answers
    assert len({body["id"] for _, body in answers}) == 1
    (execution,) = Execution.objects.filter(idempotency_key=key)
    done = live.wait(execution.pk, timeout=120)
    assert done.status == "succeeded", timeline(done)
    recorded = [e for e in events(done, "signal_received") if e.node_id is None]
    assert sorted(e.data["data"]["client"] for e in recorded) == list(range(CLIENTS))
    delivered = [e for e in events(done, "signal_received") if e.node_id is not None]
    assert len(delivered) == CLIENTS
    assert sorted(item["client"] for item in done.output["orders"]) == list(range(CLIENTS))
    assert_replayable(done)
