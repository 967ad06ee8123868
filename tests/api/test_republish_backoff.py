"""The sweeper republishes an unclaimed attempt with a per-attempt backoff: after the
interval, then once it has waited as long again as it had at its last publish (capped),
so a deep but healthy queue is not flooded with copies of every waiting attempt."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from executions.models import Attempt, AttemptStatus
from executions.services import sweep as sweeper
from tests.factories import start

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
