"""Nodes' rate limits through the services a worker calls, on a frozen clock: the claim
gate takes a token or sends the attempt back to wait, the dispatch releases waiting ones
as tokens come back, and `why` says what each waits for. Messages are recorded, not sent
(real workers: tests/integration/test_rate_limits.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from executions import messages
from executions.engine.events import EventType
from executions.kernel.rates import rate_dispatch
from executions.models import Attempt, AttemptStatus, RateBucket
from executions.services.attempts import attempt_claim, attempt_complete
from executions.services.why import why_execution
from tests.factories import events, start
from workflows.services import definition_validate

pytestmark = pytest.mark.django_db(transaction=True)

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    frozen = Clock()
    monkeypatch.setattr("workflows.clock.now", frozen)
    return frozen


@pytest.fixture
def sent(monkeypatch) -> list[int]:
    published: list[int] = []
    monkeypatch.setattr(messages, "publish_attempt", lambda pk, **_: published.append(pk))
    return published


def limited(width: int, **limit: Any) -> dict[str, Any]:
    rate = {"per_second": 2, **limit}
    node = {"type": "function", "function": "std.noop", "rate_limit": rate}
    return {"nodes": [{"id": f"n{i}", **node} for i in range(width)]}


def claim_all(execution) -> list[str]:
    """Claim every published attempt of the execution, as workers would: the node ids
    that started."""
    started = []
    rows = Attempt.objects.filter(
        execution=execution, status=AttemptStatus.SCHEDULED, published_at__isnull=False
    ).order_by("pk")
    for row in rows:
        if attempt_claim(attempt_id=row.pk, worker_id="w1") is not None:
            started.append(row.node_id)
    return started


def waiting(execution) -> list[str]:
    rows = Attempt.objects.filter(execution=execution, rate_key__isnull=False, status="scheduled")
    return sorted(rows.filter(published_at__isnull=True).values_list("node_id", flat=True))


def test_the_burst_starts_the_rest_wait_and_start_as_tokens_return(clock, sent) -> None:
    execution = start(limited(5, key="{{ input.account }}", burst=2), {"account": "acme"})
    assert claim_all(execution) == ["n0", "n1"]
    assert waiting(execution) == ["n2", "n3", "n4"]
    bucket = RateBucket.objects.get()
    assert (bucket.key, bucket.per_second, bucket.burst) == ("key:acme", 2.0, 2)

    why = {node["node_id"]: node["reasons"] for node in why_execution(execution)}
    (reason,) = why["n3"]
    assert reason["code"] == "rate_limited"
    assert reason["key"] == "key:acme"
    # Two tokens a second, n2 ahead of it: its token comes a second from now.
    assert reason["due_at"] == "2026-03-02T10:00:01Z"
    assert "2 a second" in reason["message"]

    # The wait is in the log, once per attempt, with when its token was due.
    waits = events(execution, EventType.TASK_RATE_LIMITED)
    assert [(e.node_id, e.data["key"], e.source) for e in waits] == [
        ("n2", "key:acme", "worker"),
        ("n3", "key:acme", "worker"),
        ("n4", "key:acme", "worker"),
    ]
    assert [e.data["until"] for e in waits] == [
        "2026-03-02T10:00:00.500000Z",
        "2026-03-02T10:00:01Z",
        "2026-03-02T10:00:01.500000Z",
    ]
    assert rate_dispatch(key="key:acme") == 0  # no token yet
    clock.now = T0 + timedelta(seconds=0.5)
    assert rate_dispatch(key="key:acme") == 1
    assert claim_all(execution) == ["n2"]
    clock.now = T0 + timedelta(seconds=1.5)
    assert rate_dispatch(key="key:acme") == 2
    assert claim_all(execution) == ["n3", "n4"]
    assert waiting(execution) == []
    assert len(events(execution, EventType.TASK_RATE_LIMITED)) == 3  # not again on release
    for row in Attempt.objects.filter(execution=execution):
        attempt_complete(attempt_id=row.pk, worker_id="w1", output=None)
    execution.refresh_from_db()
    assert execution.status == "succeeded"
    stamps = [e.timestamp for e in events(execution, EventType.TASK_STARTED)]
    assert stamps == [T0, T0, T0 + timedelta(seconds=0.5), *[T0 + timedelta(seconds=1.5)] * 2]


def test_executions_share_a_key_and_other_keys_have_their_own(clock, sent) -> None:
    definition = limited(2, key="{{ input.account }}", burst=1)
    first = start(definition, {"account": "acme"})
    second = start(definition, {"account": "acme"})
    other = start(definition, {"account": "globex"})
    assert claim_all(first) == ["n0"]
    assert claim_all(second) == []
    assert claim_all(other) == ["n0"]
    assert set(RateBucket.objects.values_list("key", flat=True)) == {"key:acme", "key:globex"}


def test_without_a_key_the_workflows_node_is_its_bucket(clock, sent) -> None:
    execution = start(limited(1, burst=1))
    again = start(limited(1, burst=1))
    assert claim_all(execution) == ["n0"]
    assert claim_all(again) == ["n0"]  # another workflow (make_version names each anew)
    keys = sorted(RateBucket.objects.values_list("key", flat=True))
    assert keys == sorted(f"node:{e.workflow_id}:n0" for e in (execution, again))


@pytest.mark.parametrize(
    ("limit", "problem"),
    [
        ({"per_second": 0}, "rate_limit.per_second: must be a number > 0"),
        ({"per_second": 1, "burst": 0}, "rate_limit.burst: must be an integer between 1"),
        ({"per_second": 1, "every": 2}, "rate_limit.every: unknown field"),
        ({"per_second": 1, "key": "{{ secrets.TOKEN }}"}, "rate_limit.key"),
        ({"per_second": 1, "key": "{{ input.[ }}"}, "rate_limit.key"),
        ("fast", "rate_limit: must be an object"),
    ],
)
def test_bad_rate_limits_are_refused_naming_the_field(limit: Any, problem: str) -> None:
    definition = {
        "nodes": [{"id": "a", "type": "function", "function": "std.noop", "rate_limit": limit}]
    }
    with pytest.raises(Exception, match=problem.replace("[", r"\[")):
        definition_validate(definition=definition)


def test_a_rate_limit_only_on_nodes_a_worker_runs() -> None:
    definition = {
        "nodes": [{"id": "d", "type": "delay", "seconds": 1, "rate_limit": {"per_second": 1}}]
    }
    with pytest.raises(Exception, match="rate_limit applies to"):
        definition_validate(definition=definition)


def test_a_map_items_key_reads_its_item(clock, sent) -> None:
    # The per-item node's key reads `item` as its other templates do: one bucket per
    # account, not one per index (nor unlimited, as a key that did not render would be).
    body = {
        "type": "function",
        "function": "std.noop",
        "rate_limit": {"key": "crm:{{ item.account }}", "per_second": 1, "burst": 1},
    }
    definition = {"nodes": [{"id": "m", "type": "map", "items": "input.rows", "node": body}]}
    rows = [{"account": "acme"}, {"account": "globex"}, {"account": "acme"}]
    execution = start(definition, {"rows": rows})
    assert claim_all(execution) == ["m[0]", "m[1]"]
    assert waiting(execution) == ["m[2]"]
    assert set(RateBucket.objects.values_list("key", flat=True)) == {
        "key:crm:acme",
        "key:crm:globex",
    }
    (wait,) = events(execution, EventType.TASK_RATE_LIMITED)
    assert (wait.node_id, wait.data["key"]) == ("m[2]", "key:crm:acme")
