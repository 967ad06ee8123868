"""Pools (slots shared by every execution) and the per-execution in-flight cap, through
the API and the services a worker calls: the claim gate, the dispatch that follows a
freed slot, held attempts, and what `why` says of them. Messages are recorded, not sent (the
real broker and workers are tests/integration/test_capacity.py's)."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from executions import messages
from executions.kernel.lock import advance_pending
from executions.models import Attempt, AttemptStatus
from executions.services import control
from executions.services.attempts import (
    attempt_claim,
    attempt_complete,
    attempt_complete_and_claim_next,
    attempt_fail,
)
from executions.services.pools import pool_create
from tests.factories import events, fan, start

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sent(monkeypatch) -> list[int]:
    """The attempt ids published, in order (after each commit, as the engine sends)."""
    published: list[int] = []
    monkeypatch.setattr(messages, "publish_attempt", lambda pk, **_: published.append(pk))
    return published


def pooled(width: int, pool: str = "api", **node: Any) -> dict[str, Any]:
    return {
        "nodes": [
            {"id": f"n{i}", "type": "function", "function": "std.noop", "pool": pool, **node}
            for i in range(width)
        ]
    }


def held(execution) -> set[str]:
    rows = Attempt.objects.filter(
        execution=execution, status=AttemptStatus.SCHEDULED, published_at__isnull=True
    )
    return set(rows.values_list("node_id", flat=True))


def attempt(execution, node_id: str) -> Attempt:
    return Attempt.objects.get(execution=execution, node_id=node_id)


# The API.


def test_create_list_read_and_patch_a_pool(api) -> None:
    created = api.post("/pools", {"name": "payments-api", "slots": 2}, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["name"] == "payments-api"
    assert body["slots"] == 2
    assert (body["running"], body["free"], body["waiting"]) == (0, 2, 0)
    assert body["created_by"] == "operator"
    listed = api.get("/pools").json()["results"]
    assert [p["name"] for p in listed] == ["payments-api"]
    changed = api.patch("/pools/payments-api/", {"slots": 5}, format="json")
    assert changed.status_code == 200, changed.content
    assert changed.json()["slots"] == 5
    assert changed.json()["free"] == 5
    assert api.get("/pools/payments-api").json()["slots"] == 5


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "p", "slots": -1}, "slots"),
        ({"name": "p", "slots": "2"}, "slots"),
        ({"name": "p", "slots": True}, "slots"),
        ({"name": "p"}, "slots"),
        ({"name": "Not A Slug", "slots": 1}, "name"),
        ({"slots": 1}, "name"),
        ({"name": "p", "slots": 2**40}, "slots"),
    ],
)
def test_a_bad_pool_is_a_400_naming_the_field(api, body, field) -> None:
    response = api.post("/pools", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()


def test_a_duplicate_name_is_a_409_that_says_how_to_change_it(api) -> None:
    assert api.post("/pools", {"name": "dup", "slots": 1}, format="json").status_code == 201
    again = api.post("/pools", {"name": "dup", "slots": 3}, format="json")
    assert again.status_code == 409
    assert "PATCH /pools/dup" in again.json()["detail"]
    assert api.get("/pools/dup").json()["slots"] == 1


def test_patch_refuses_negative_slots_and_an_unknown_pool_is_404(api) -> None:
    pool_create(name="fixed", slots=1)
    assert api.patch("/pools/fixed", {"slots": -2}, format="json").status_code == 400
    assert api.patch("/pools/nope", {"slots": 2}, format="json").status_code == 404
    assert api.get("/pools/nope").status_code == 404


def test_anonymous_is_401(client) -> None:
    assert client.get("/pools").status_code == 401
    assert client.post("/pools", {"name": "x", "slots": 1}).status_code == 401


# The DSL.


def test_a_definition_naming_a_missing_pool_is_a_400_naming_node_and_pool(api) -> None:
    definition = pooled(1, pool="ghost")
    response = api.post("/workflows", {"name": "ghostly", "definition": definition}, format="json")
    assert response.status_code == 400, response.content
    text = str(response.json())
    assert "n0" in text
    assert "ghost" in text
    assert "POST /pools" in text
    pool_create(name="ghost", slots=1)
    ok = api.post("/workflows", {"name": "ghostly", "definition": definition}, format="json")
    assert ok.status_code == 201, ok.content


@pytest.mark.parametrize(
    ("node", "message"),
    [
        ({"id": "d", "type": "delay", "seconds": 1, "pool": "api"}, "takes no worker slot"),
        ({"id": "f", "type": "function", "function": "std.noop", "pool": 3}, "a pool's name"),
        ({"id": "f", "type": "function", "function": "std.noop", "pool": "Bad!"}, "not a pool"),
    ],
)
def test_pool_field_validation(api, node, message) -> None:
    pool_create(name="api", slots=1)
    response = api.post(
        "/workflows", {"name": "bad", "definition": {"nodes": [node]}}, format="json"
    )
    assert response.status_code == 400, response.content
    assert message in str(response.json()), response.json()


def test_a_map_item_body_may_name_a_pool(api) -> None:
    pool_create(name="api", slots=1)
    definition = {
        "nodes": [
            {
                "id": "m",
                "type": "map",
                "items": "input.xs",
                "node": {"type": "function", "function": "std.noop", "pool": "api"},
            }
        ]
    }
    assert (
        api.post(
            "/workflows", {"name": "mapped", "definition": definition}, format="json"
        ).status_code
        == 201
    )
    definition["nodes"][0]["node"]["pool"] = "elsewhere"
    refused = api.post("/workflows", {"name": "mapped2", "definition": definition}, format="json")
    assert refused.status_code == 400
    assert "node.pool" in str(refused.json())


# The gate, the dispatch, and why.


def test_one_slot_shared_by_two_executions(api, sent) -> None:
    pool_create(name="api", slots=1)
    first, second = start(pooled(1)), start(pooled(1))
    # Both held at first; the dispatch after each start published what fits: one.
    a, b = attempt(first, "n0"), attempt(second, "n0")
    assert sent == [a.pk]
    assert held(second) == {"n0"}
    assert api.get("/pools/api").json()["waiting"] == 2
    # A stale or duplicated message for the held one is refused by the gate.
    assert attempt_claim(attempt_id=a.pk, worker_id="w1") is not None
    assert attempt_claim(attempt_id=b.pk, worker_id="w2") is None
    assert held(second) == {"n0"}
    entry = api.get(f"/executions/{second.pk}/tasks/n0/why").json()
    assert [r["code"] for r in entry["reasons"]] == ["pool_full"]
    assert entry["reasons"][0]["pool"] == "api"
    assert (entry["reasons"][0]["running"], entry["reasons"][0]["slots"]) == (1, 1)
    pool = api.get("/pools/api").json()
    assert (pool["running"], pool["free"]) == (1, 0)
    # The first finishes: its slot's dispatch publishes the second, which now claims.
    assert attempt_complete(attempt_id=a.pk, worker_id="w1", output=None)
    assert sent == [a.pk, b.pk]
    assert attempt_claim(attempt_id=b.pk, worker_id="w2") is not None
    started = events(first, type="task_completed")[0].timestamp
    assert events(second, type="task_started")[0].timestamp > started


def test_raising_the_slots_releases_waiting_nodes(api, sent) -> None:
    pool_create(name="api", slots=0)
    execution = start(pooled(3))
    assert sent == []
    assert held(execution) == {"n0", "n1", "n2"}
    codes = {
        e["node_id"]: e["reasons"][0]["code"]
        for e in api.get(f"/executions/{execution.pk}/why").json()
    }
    assert codes == {"n0": "pool_full", "n1": "pool_full", "n2": "pool_full"}
    assert api.patch("/pools/api", {"slots": 2}, format="json").status_code == 200
    assert len(sent) == 2
    assert len(held(execution)) == 1
    # Published but unclaimed ones count: a second dispatch publishes nothing more.
    assert api.patch("/pools/api", {"slots": 2}, format="json").status_code == 200
    assert len(sent) == 2


def test_a_failed_attempt_frees_its_slot_and_its_retry_waits_for_one(sent) -> None:
    pool_create(name="api", slots=1)
    policy = {"max_attempts": 2, "initial_interval_seconds": 0.1, "jitter": False}
    start(pooled(2, retry_policy=policy))
    first = Attempt.objects.get(pk=sent[0])
    assert attempt_claim(attempt_id=first.pk, worker_id="w") is not None
    error = {"type": "Boom", "message": "no", "retryable": True}
    assert attempt_fail(attempt_id=first.pk, worker_id="w", error=error)
    # The other node took the freed slot.
    assert len(sent) == 2
    assert sent[1] != first.pk


def test_cancel_frees_the_slot_for_another_execution(sent) -> None:
    pool_create(name="api", slots=1)
    first, second = start(pooled(1)), start(pooled(1))
    assert attempt_claim(attempt_id=attempt(first, "n0").pk, worker_id="w") is not None
    control.execution_cancel(execution_id=first.pk)
    assert sent[-1] == attempt(second, "n0").pk


def test_eager_dispatch_respects_the_pool(sent) -> None:
    """A finishing worker runs its execution's next attempt itself only if it has no pool:
    a pool's held attempts are its dispatch's to publish, as slots free up."""
    pool_create(name="api", slots=1)
    execution = start({"nodes": [
        {"id": "a", "type": "function", "function": "std.noop"},
        {"id": "b", "type": "function", "function": "std.noop", "pool": "api", "depends_on": ["a"]},
        {"id": "c", "type": "function", "function": "std.noop", "pool": "api", "depends_on": ["a"]},
    ]})  # fmt: skip
    other = start(pooled(1))
    assert attempt_claim(attempt_id=attempt(other, "n0").pk, worker_id="x") is not None
    assert attempt_claim(attempt_id=attempt(execution, "a").pk, worker_id="w") is not None
    # b and c are held behind the pool (full): nothing to claim eagerly.
    nxt = attempt_complete_and_claim_next(
        attempt_id=attempt(execution, "a").pk, worker_id="w", output=None
    )
    assert nxt is None
    assert held(execution) == {"b", "c"}
    # The slot frees: the dispatch publishes the first of them.
    assert attempt_complete(attempt_id=attempt(other, "n0").pk, worker_id="x", output=None)
    assert held(execution) == {"c"}
    assert sent[-1] == attempt(execution, "b").pk


# The in-flight cap.


def test_a_fan_out_publishes_up_to_the_cap_and_tops_up_as_claims_take_them(
    api, sent, settings
) -> None:
    settings.WORKFLOW_MAX_IN_FLIGHT_PER_EXECUTION = 3
    execution = start(fan(8))
    root = attempt(execution, "root")
    assert attempt_claim(attempt_id=root.pk, worker_id="w") is not None
    assert attempt_complete(attempt_id=root.pk, worker_id="w", output=None)
    out = sent[1:]
    assert len(out) == 3
    assert len(held(execution)) == 5
    held_one = sorted(held(execution))[0]
    reasons = api.get(f"/executions/{execution.pk}/tasks/{held_one}/why").json()["reasons"]
    assert reasons[0]["code"] == "queued"
    assert "WORKFLOW_MAX_IN_FLIGHT_PER_EXECUTION" in reasons[0]["message"]
    # A claim from the broker takes one message out: one held is published once the
    # claim is logged (on PostgreSQL by the next unit: the result's, or its lease
    # keeper's 50 ms in, which this drain stands for: executions/kernel/inbox.py).
    assert attempt_claim(attempt_id=out[0], worker_id="w") is not None
    advance_pending(execution.pk, claims=True)
    assert len(sent) == 5
    assert len(held(execution)) == 4
    # A finishing worker runs a held one itself: no message spent, none published.
    nxt = attempt_complete_and_claim_next(attempt_id=out[0], worker_id="w", output=None)
    assert nxt is not None
    assert len(sent) == 5
    assert len(held(execution)) == 3
    unclaimed = Attempt.objects.filter(
        execution=execution, status=AttemptStatus.SCHEDULED, published_at__isnull=False
    )
    assert unclaimed.count() == 3


def test_a_chain_hop_spends_no_message(sent) -> None:
    execution = start({"nodes": [
        {"id": "a", "type": "function", "function": "std.noop"},
        {"id": "b", "type": "function", "function": "std.noop", "depends_on": ["a"]},
    ]})  # fmt: skip
    a = attempt(execution, "a")
    assert attempt_claim(attempt_id=a.pk, worker_id="w") is not None
    nxt = attempt_complete_and_claim_next(attempt_id=a.pk, worker_id="w", output=None)
    assert nxt is not None
    assert nxt.node.id == "b"
    assert sent == [a.pk]


def test_pause_holds_and_resume_releases_only_what_fits(sent, settings) -> None:
    settings.WORKFLOW_MAX_IN_FLIGHT_PER_EXECUTION = 2
    execution = start(fan(5))
    root = attempt(execution, "root")
    assert attempt_claim(attempt_id=root.pk, worker_id="w") is not None
    control.execution_pause(execution_id=execution.pk)
    assert attempt_complete(attempt_id=root.pk, worker_id="w", output=None)
    control.execution_resume(execution_id=execution.pk)
    unclaimed = Attempt.objects.filter(
        execution=execution, status=AttemptStatus.SCHEDULED, published_at__isnull=False
    )
    assert unclaimed.count() == 2
    assert len(held(execution)) == 3


# The backstops: the sweeper, and a rebuild from the logs.


def test_the_sweeper_releases_what_a_lost_dispatch_or_top_up_left_held(sent, settings) -> None:
    from executions.services import sweep as sweeper

    settings.WORKFLOW_MAX_IN_FLIGHT_PER_EXECUTION = 2
    pool_create(name="api", slots=1)
    pooled_one = start(pooled(2))
    capped = start(fan(4))
    root = attempt(capped, "root")
    assert attempt_claim(attempt_id=root.pk, worker_id="w") is not None
    assert attempt_complete(attempt_id=root.pk, worker_id="w", output=None)
    assert len(held(pooled_one)) == 1
    assert len(held(capped)) == 2
    # A slot and a message freed behind the engine's back (as if their dispatch and
    # top-up were lost with a crash right after the commit).
    for execution in (pooled_one, capped):
        Attempt.objects.filter(
            execution=execution, status=AttemptStatus.SCHEDULED, published_at__isnull=False
        ).update(status=AttemptStatus.CANCELLED)
    before = len(sent)
    report = sweeper.SweepReport()
    sweeper._release_held(report, timezone.now(), [])
    assert report.released == 3
    assert len(sent) == before + 3
    assert held(pooled_one) == set()
    assert held(capped) == set()
    # Nothing more to release: a second tick publishes nothing.
    sweeper._release_held(report, timezone.now(), [])
    assert len(sent) == before + 3


def test_a_rebuild_from_the_logs_keeps_the_pool(sent) -> None:
    from executions.integrity import rebuild_rows

    pool_create(name="api", slots=1)
    execution = start(pooled(1))
    Attempt.objects.filter(execution=execution).delete()
    rebuild_rows(execution.pk)
    assert attempt(execution, "n0").pool_id == "api"


def test_a_freed_slot_goes_to_the_highest_priority_then_the_first_scheduled(api, sent) -> None:
    pool_create(name="api", slots=0)
    low, later_low = start(pooled(1)), start(pooled(1))
    high = start(pooled(1), priority=9)
    assert sent == []
    assert api.patch("/pools/api", {"slots": 1}, format="json").status_code == 200
    assert sent == [attempt(high, "n0").pk]
    assert attempt_claim(attempt_id=sent[0], worker_id="w") is not None
    assert attempt_complete(attempt_id=sent[0], worker_id="w", output=None)
    assert sent[1:] == [attempt(low, "n0").pk]
    assert held(later_low) == {"n0"}
