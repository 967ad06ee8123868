"""The sweeper republishes an unclaimed attempt with a per-attempt backoff: after the
interval, then once it has waited as long again as it had at its last publish (capped),
so a deep but healthy queue is not flooded with copies of every waiting attempt. The wait
counts from its release into the broker (an attempt held long is not made to wait the
cap), and a message a later peer overtook is sent again at once."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from executions.kernel.lock import advance_pending
from executions.models import Attempt, AttemptStatus, Task
from executions.services import sweep as sweeper
from executions.services.attempts import attempt_claim, attempt_complete
from tests.factories import fan, start

pytestmark = pytest.mark.django_db

ONE = {"nodes": [{"id": "a", "type": "function", "function": "std.echo"}]}


def test_an_unclaimed_attempt_is_republished_after_15_30_60_seconds(monkeypatch, settings):
    settings.WORKFLOW_REPUBLISH_AFTER_SECONDS = 15
    sent: list[str] = []
    monkeypatch.setattr(sweeper.messages, "publish_attempt", lambda pk, **_: sent.append(str(pk)))
    execution = start(ONE)
    attempt = Attempt.objects.get(execution=execution, node_id="a")
    assert attempt.status == AttemptStatus.SCHEDULED
    t0 = attempt.scheduled_at
    assert attempt.published_at == t0

    def tick(seconds: float) -> int:
        report = sweeper.SweepReport()
        sweeper._republish_lost(report, t0 + timedelta(seconds=seconds), [])
        return report.republished

    # seconds since scheduling -> republished then?
    expected = [(10, 0), (16, 1), (20, 0), (30, 0), (33, 1), (50, 0), (66, 1), (100, 0), (132, 1)]
    assert [(s, tick(s)) for s, _ in expected] == expected
    assert len(sent) == 4
    # Capped at 16 intervals (240 s) however long it has waited.
    Attempt.objects.filter(pk=attempt.pk).update(published_at=t0 + timedelta(hours=1))
    assert tick(3600 + 200) == 0
    assert tick(3600 + 241) == 1


def test_a_claimed_attempt_is_never_republished(monkeypatch, settings):
    monkeypatch.setattr(sweeper.messages, "publish_attempt", lambda pk, **_: None)
    execution = start(ONE)
    Attempt.objects.filter(execution=execution).update(status=AttemptStatus.RUNNING)
    report = sweeper.SweepReport()
    sweeper._republish_lost(report, timezone.now() + timedelta(hours=2), [])
    assert report.republished == 0


# An attempt held before its release: the backoff counts from the release.


def test_an_attempt_held_long_then_released_and_lost_is_sent_again_after_one_interval(
    monkeypatch, settings
) -> None:
    settings.WORKFLOW_REPUBLISH_AFTER_SECONDS = 15
    settings.WORKFLOW_MAX_IN_FLIGHT_PER_EXECUTION = 1
    sent: list[int] = []
    monkeypatch.setattr(sweeper.messages, "publish_attempt", lambda pk, **_: sent.append(pk))
    execution = start(fan(2))
    root = Attempt.objects.get(execution=execution, node_id="root")
    assert attempt_claim(attempt_id=root.pk, worker_id="w") is not None
    assert attempt_complete(attempt_id=root.pk, worker_id="w", output=None)
    first, second = Attempt.objects.filter(execution=execution, node_id__in=["f0", "f1"]).order_by(
        "pk"
    )
    assert first.published_at is not None
    assert second.published_at is None
    # It waited ten minutes held (scheduled then), then the claim of the first released it.
    Attempt.objects.filter(pk=second.pk).update(
        scheduled_at=second.scheduled_at - timedelta(minutes=10)
    )
    assert attempt_claim(attempt_id=first.pk, worker_id="w") is not None
    advance_pending(execution.pk, claims=True)  # the claim logged: the top-up runs
    second.refresh_from_db()
    assert second.published_at is not None
    assert second.released_at == second.published_at
    released = second.released_at

    def tick(seconds: float) -> int:
        report = sweeper.SweepReport()
        sweeper._republish_lost(report, released + timedelta(seconds=seconds), [])
        return report.republished

    # Its message is lost (a broker restart): sent again after 15 s, not 240 s, then the
    # backoff goes on from the release as for any other attempt.
    sent.clear()
    expected = [(10, 0), (16, 1), (20, 0), (33, 1), (50, 0), (66, 1)]
    assert [(s, tick(s)) for s, _ in expected] == expected
    assert sent == [second.pk] * 3


def overtaken_setup() -> tuple[Attempt, Attempt]:
    """x and root published together at the start; y, after root, published later and
    claimed (a task_started just now: the execution is busy). x's message is lost."""
    execution = start({"nodes": [
        {"id": "x", "type": "function", "function": "std.noop"},
        {"id": "root", "type": "function", "function": "std.noop"},
        {"id": "y", "type": "function", "function": "std.noop", "depends_on": ["root"]},
    ]})  # fmt: skip
    root = Attempt.objects.get(execution=execution, node_id="root")
    assert attempt_claim(attempt_id=root.pk, worker_id="w") is not None
    assert attempt_complete(attempt_id=root.pk, worker_id="w", output=None)
    y = Attempt.objects.get(execution=execution, node_id="y")
    assert attempt_claim(attempt_id=y.pk, worker_id="w") is not None
    advance_pending(execution.pk, claims=True)  # its task_started in the log
    x = Attempt.objects.get(execution=execution, node_id="x")
    y.refresh_from_db()
    assert x.status == AttemptStatus.SCHEDULED
    assert y.released_at is not None
    assert x.published_at is not None
    assert y.released_at > x.published_at
    assert y.claimed_at is not None
    return x, y


def test_an_attempt_overtaken_by_a_later_peer_is_sent_again_at_once(monkeypatch, settings):
    settings.WORKFLOW_REPUBLISH_AFTER_SECONDS = 15
    settings.WORKFLOW_SWEEP_INTERVAL = 1.0
    sent: list[int] = []
    monkeypatch.setattr(sweeper.messages, "publish_attempt", lambda pk, **_: sent.append(pk))
    x, y = overtaken_setup()
    claimed_at = y.claimed_at
    assert claimed_at is not None

    def tick(after_claim: float) -> int:
        report = sweeper.SweepReport()
        sweeper._republish_lost(report, claimed_at + timedelta(seconds=after_claim), [])
        return report.republished

    # Within the grace a delivery of both at once may still be claiming x: not yet.
    assert tick(0.5) == 0
    # Then at once: long before the first interval, though the execution logs events
    # (its workers busy: the idle rule alone would wait), a peer sent after it was
    # claimed, so x's message, sent first on the same queue, is gone.
    assert tick(2) == 1
    assert sent == [x.pk]
    # Sent again: y was released before that copy, so it proves nothing any more.
    assert tick(4) == 0
    assert tick(10) == 0


def test_a_peer_released_before_or_claimed_eagerly_proves_nothing(monkeypatch, settings):
    settings.WORKFLOW_REPUBLISH_AFTER_SECONDS = 15
    monkeypatch.setattr(sweeper.messages, "publish_attempt", lambda pk, **_: None)
    x, y = overtaken_setup()
    assert y.claimed_at is not None
    report = sweeper.SweepReport()
    # Released no later than x's publish (as in one unit's fan-out): no evidence.
    Attempt.objects.filter(pk=y.pk).update(released_at=x.published_at)
    sweeper._republish_lost(report, y.claimed_at + timedelta(seconds=2), [])
    assert report.republished == 0
    # Claimed eagerly: it never had a message.
    Attempt.objects.filter(pk=y.pk).update(released_at=None, published_at=None)
    sweeper._republish_lost(report, y.claimed_at + timedelta(seconds=2), [])
    assert report.republished == 0


def test_with_node_queues_only_a_peer_on_the_same_queue_is_evidence(monkeypatch, settings):
    settings.WORKFLOW_REPUBLISH_AFTER_SECONDS = 15
    sent: list[int] = []
    monkeypatch.setattr(sweeper.messages, "publish_attempt", lambda pk, **_: sent.append(pk))
    x, y = overtaken_setup()
    assert y.claimed_at is not None
    Task.objects.filter(execution_id=y.execution_id, node_id="y").update(type="http")
    settings.WORKFLOW_NODE_QUEUES = {"http": "http"}
    report = sweeper.SweepReport()
    sweeper._republish_lost(report, y.claimed_at + timedelta(seconds=2), [])
    assert report.republished == 0  # y went through the http queue: no order with x's
    Task.objects.filter(execution_id=y.execution_id, node_id="y").update(type="function")
    sweeper._republish_lost(report, y.claimed_at + timedelta(seconds=2), [])
    assert report.republished == 1
    assert sent == [x.pk]
