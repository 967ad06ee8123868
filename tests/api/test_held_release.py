"""Releasing held attempts (executions/kernel/capacity.py) without getting in anyone's
way: the sweeper's top-up leaves an execution whose in-flight cap is full without taking
its lock, a claim's pool lock lets attempt INSERTs through, each released message goes
out on its own, a resume routes by node type, and eager dispatch yields to higher-priority
work. Messages are recorded, not sent (the real broker is tests/integration's)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from executions import messages
from executions.kernel import capacity
from executions.models import Attempt, AttemptStatus
from executions.services import control
from executions.services import sweep as sweeper
from executions.services.attempts import (
    attempt_claim,
    attempt_complete,
    attempt_complete_and_claim_next,
)
from executions.services.pools import pool_create
from tests.factories import fan, start

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sent(monkeypatch) -> list[tuple[int, dict[str, Any]]]:
    """(attempt id, keyword arguments) of every attempt published, in order."""
    published: list[tuple[int, dict[str, Any]]] = []
    monkeypatch.setattr(
        messages, "publish_attempt", lambda pk, **kwargs: published.append((pk, kwargs))
    )
    return published


CHAIN = {
    "nodes": [
        {"id": "a", "type": "function", "function": "std.noop"},
        {"id": "b", "type": "function", "function": "std.noop", "depends_on": ["a"]},
    ]
}


def attempt(execution, node_id: str) -> Attempt:
    return Attempt.objects.get(execution=execution, node_id=node_id)


def in_broker(execution) -> list[int]:
    rows = Attempt.objects.filter(
        execution=execution, status=AttemptStatus.SCHEDULED, published_at__isnull=False
    )
    return list(rows.order_by("pk").values_list("pk", flat=True))


def held(execution) -> list[int]:
    rows = Attempt.objects.filter(
        execution=execution, status=AttemptStatus.SCHEDULED, published_at__isnull=True
    )
    return list(rows.order_by("pk").values_list("pk", flat=True))


def fanned_out(width: int) -> Any:
    """An execution past its cap: root done, `width` attempts scheduled."""
    execution = start(fan(width))
    root = attempt(execution, "root")
    assert attempt_claim(attempt_id=root.pk, worker_id="w") is not None
    assert attempt_complete(attempt_id=root.pk, worker_id="w", output=None)
    return execution


# The sweeper's top-up: counted before it locks.


def test_the_sweeper_leaves_an_execution_whose_cap_is_full_without_locking_it(
    sent, settings, monkeypatch
) -> None:
    settings.WORKFLOW_MAX_IN_FLIGHT_PER_EXECUTION = 2
    execution = fanned_out(5)
    assert len(in_broker(execution)) == 2
    assert len(held(execution)) == 3
    locked: list[str] = []
    lock = sweeper.lock_execution

    def spy(pk: Any) -> Any:
        locked.append(str(pk))
        return lock(pk)

    monkeypatch.setattr(sweeper, "lock_execution", spy)
    report = sweeper.SweepReport()
    sweeper._release_held(report, timezone.now(), [])
    assert (report.released, locked) == (0, []), "a full execution's lock was taken"
    # A message gone behind the engine's back (its top-up lost): room for one, and only
    # then the lock.
    Attempt.objects.filter(pk=in_broker(execution)[0]).update(status=AttemptStatus.CANCELLED)
    sweeper._release_held(report, timezone.now(), [])
    assert (report.released, locked) == (1, [str(execution.pk)])
    assert len(in_broker(execution)) == 2
    assert len(held(execution)) == 2


# The pool lock: FOR NO KEY UPDATE.


def test_the_pool_lock_is_no_key_update_through_one_helper() -> None:
    pool_create(name="api", slots=1)
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        assert capacity._lock_pool("api") == 1
    sql = queries.captured_queries[-1]["sql"]
    if connection.features.has_select_for_no_key_update:
        assert "FOR NO KEY UPDATE" in sql
    elif connection.features.has_select_for_update:
        assert "FOR UPDATE" in sql


@pytest.mark.skipif(
    not connection.features.has_select_for_no_key_update, reason="PostgreSQL's row locks"
)
def test_a_claims_pool_check_does_not_hold_up_an_attempt_insert_naming_the_pool(sent) -> None:
    pool_create(name="api", slots=1)
    pooled = {"nodes": [{"id": "n", "type": "function", "function": "std.noop", "pool": "api"}]}
    execution = start(pooled)
    checking, done = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def claim_gate() -> None:
        # A claimer inside its pool check, holding the Pool row's lock.
        try:
            with transaction.atomic():
                assert capacity.pool_admits("api", attempt(execution, "n").pk)
                checking.set()
                done.wait(10)
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)
            checking.set()
        finally:
            connections.close_all()

    thread = threading.Thread(target=claim_gate)
    thread.start()
    try:
        assert checking.wait(10)
        # Another unit scheduling an attempt in the pool: its foreign key check takes a
        # KEY SHARE lock on the Pool row, which FOR UPDATE would make it wait for.
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '2s'")
            Attempt.objects.create(
                execution=execution,
                node_id="other",
                attempt=1,
                scheduled_at=timezone.now(),
                pool_id="api",
            )
    finally:
        done.set()
        thread.join(10)
    assert not failures, failures


# Each released message on its own.


def test_one_failed_publish_does_not_stop_the_other_released_ones(settings, monkeypatch) -> None:
    settings.WORKFLOW_MAX_IN_FLIGHT_PER_EXECUTION = 3
    published: list[int] = []
    monkeypatch.setattr(messages, "publish_attempt", lambda pk, **_: published.append(pk))
    execution = fanned_out(6)
    assert len(held(execution)) == 3
    # All three messages gone (a broker restart): the sweeper's top-up releases three.
    Attempt.objects.filter(pk__in=in_broker(execution)).update(status=AttemptStatus.CANCELLED)
    released = held(execution)
    failing = released[0]

    def publish(pk: int, **_: Any) -> None:
        if pk == failing:
            raise RuntimeError("the broker refused it")
        published.append(pk)

    monkeypatch.setattr(messages, "publish_attempt", publish)
    published.clear()
    report = sweeper.SweepReport()
    sweeper._release_held(report, timezone.now(), [])
    assert report.released == 3
    assert published == released[1:], "a failed send stopped the ones after it"


def test_one_failing_send_of_an_outbox_does_not_stop_the_others() -> None:
    ran: list[str] = []

    def failing() -> None:
        raise RuntimeError("gone")

    with transaction.atomic():
        outbox = messages.Outbox()
        outbox.add(lambda: ran.append("first"))
        outbox.add(failing)
        outbox.add(lambda: ran.append("third"))
    assert ran == ["first", "third"]


# Resume: the refused messages are sent again, routed by node type.


def test_resume_sends_the_refused_attempts_named_and_routed_by_node_type(sent) -> None:
    execution = start({"nodes": [{"id": "a", "type": "function", "function": "std.noop"}]})
    a = attempt(execution, "a")
    control.execution_pause(execution_id=execution.pk)
    assert attempt_claim(attempt_id=a.pk, worker_id="w") is None  # its message spent
    sent.clear()
    before = timezone.now()
    control.execution_resume(execution_id=execution.pk)
    assert [pk for pk, _ in sent] == [a.pk]
    kwargs = sent[0][1]
    assert kwargs["node_type"] == "function"
    assert kwargs["shadow"].endswith("/a#1")
    a.refresh_from_db()
    # Released anew: a loss of this message is sent again one interval on, not the cap.
    assert a.released_at is not None
    assert a.released_at >= before


# Eager dispatch yields to higher-priority work.


def test_eager_dispatch_hands_back_while_a_higher_priority_attempt_waits(sent) -> None:
    low = start(CHAIN, priority=0)
    a = attempt(low, "a")
    assert attempt_claim(attempt_id=a.pk, worker_id="w") is not None
    high = start({"nodes": [{"id": "h", "type": "function", "function": "std.noop"}]}, priority=5)
    h = attempt(high, "h")
    sent.clear()
    nxt = attempt_complete_and_claim_next(attempt_id=a.pk, worker_id="w", output=None)
    assert nxt is None, "the chain ran on past a priority-5 attempt waiting in the broker"
    # b, held for the eager claim, went to the broker instead (priority 0, behind h).
    b = attempt(low, "b")
    assert [pk for pk, _ in sent] == [b.pk]
    assert sent[0][1]["priority"] == 0
    assert b.status == AttemptStatus.SCHEDULED
    assert b.published_at is not None
    assert h.status == AttemptStatus.SCHEDULED


def test_eager_dispatch_goes_on_when_no_higher_priority_work_waits(sent) -> None:
    # Equal or lower priorities waiting, a higher one already running: the chain goes on.
    start({"nodes": [{"id": "l", "type": "function", "function": "std.noop"}]}, priority=3)
    busy = start({"nodes": [{"id": "h", "type": "function", "function": "std.noop"}]}, priority=9)
    assert attempt_claim(attempt_id=attempt(busy, "h").pk, worker_id="w2") is not None
    chain = start(CHAIN, priority=3)
    a = attempt(chain, "a")
    assert attempt_claim(attempt_id=a.pk, worker_id="w") is not None
    nxt = attempt_complete_and_claim_next(attempt_id=a.pk, worker_id="w", output=None)
    assert nxt is not None
    assert nxt.node.id == "b"


def test_a_priority_9_chain_is_never_outranked(sent) -> None:
    start({"nodes": [{"id": "h", "type": "function", "function": "std.noop"}]}, priority=9)
    chain = start(CHAIN, priority=9)
    a = attempt(chain, "a")
    assert attempt_claim(attempt_id=a.pk, worker_id="w") is not None
    nxt = attempt_complete_and_claim_next(attempt_id=a.pk, worker_id="w", output=None)
    assert nxt is not None
    assert nxt.node.id == "b"


def test_eager_dispatch_takes_the_oldest_held_attempt_first(sent) -> None:
    # A held attempt left from before (here x, held by hand) comes before the one the
    # result schedules: on PostgreSQL that one is inserted held, not claimed, and the
    # claim takes the oldest, as the claim after a plain INSERT always did.
    definition = {
        "nodes": [*CHAIN["nodes"], {"id": "x", "type": "function", "function": "std.noop"}]
    }
    chain = start(definition)
    a, x = attempt(chain, "a"), attempt(chain, "x")
    Attempt.objects.filter(pk=x.pk).update(published_at=None, released_at=None)
    assert attempt_claim(attempt_id=a.pk, worker_id="w") is not None
    nxt = attempt_complete_and_claim_next(attempt_id=a.pk, worker_id="w", output=None)
    assert nxt is not None
    assert nxt.node.id == "x"
    assert attempt(chain, "x").status == AttemptStatus.RUNNING
    b = attempt(chain, "b")
    assert (b.status, b.worker_id) == (AttemptStatus.SCHEDULED, "")
