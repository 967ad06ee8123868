"""The sweeper cannot be switched off from the database: with the live engine's beat
running, its django-celery-beat row is deleted, or disabled, as an operator could in the
admin; beat writes it back, and a worker killed while holding an attempt still has that
attempt timed out by the sweeper and retried, so the execution ends."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django_celery_beat.models import PeriodicTask
from rest_framework.test import APIClient

from executions.beat import SWEEPER_ENTRY
from executions.engine.events import Source
from executions.models import Attempt, AttemptStatus, SweeperState
from tests.factories import events, start, timeline
from tests.waiting import eventually as wait_for

SLEEPY = {
    "nodes": [
        {
            "id": "n",
            "type": "function",
            "function": "std.sleep",
            "input": {"seconds": 2},
            "heartbeat_timeout_seconds": 2,
        }
    ],
    "retry_policy": {"max_attempts": 3, "initial_interval_seconds": 0.5},
}


def delete_row() -> None:
    # The admin's delete: the model's delete(), which marks beat's schedule changed.
    PeriodicTask.objects.get(name=SWEEPER_ENTRY).delete()


def disable_row() -> None:
    # The admin's change form, or its "disable selected" action, saves the row.
    row = PeriodicTask.objects.get(name=SWEEPER_ENTRY)
    row.enabled = False
    row.save()


def restored() -> bool:
    return PeriodicTask.objects.filter(name=SWEEPER_ENTRY, enabled=True).exists()


def completed_sweep_after(moment) -> bool:
    return SweeperState.objects.filter(completed_at__gt=moment).exists()


@pytest.mark.parametrize("switch_off", [delete_row, disable_row], ids=["deleted", "disabled"])
def test_the_sweeper_runs_on_whatever_happens_to_its_row(
    live, switch_off: Callable[[], None]
) -> None:
    wait_for(restored, 30, "beat to write the sweeper's row at start")
    victim = live.start_worker()
    try:
        switch_off()
        assert not restored()
        wait_for(restored, 30, "beat to restore the sweeper's row")
        # A sweep that began after the restore completes: beat is sending them again.
        after = PeriodicTask.objects.get(name=SWEEPER_ENTRY).date_changed
        wait_for(lambda: completed_sweep_after(after), 30, "a sweep after the restore")

        execution = start(SLEEPY)
        first = wait_for(
            lambda: Attempt.objects.filter(
                execution=execution, attempt=1, status=AttemptStatus.RUNNING
            ).first(),
            30,
            "attempt 1 to be claimed",
        )
        holder = live.worker_holding(first)
        live.kill_worker(holder)
        if holder is not victim:
            victim = None  # the survivor is the session's own worker: leave it running
        done = live.wait(execution.pk, timeout=90)
    finally:
        if victim is not None and victim in live.workers:
            live.kill_worker(victim)
        if not live.workers:
            live.start_worker()
    assert done.status == "succeeded", (done.error, timeline(done))
    (timed_out,) = events(done, "task_timed_out")
    assert timed_out.attempt == 1
    assert timed_out.source == Source.SWEEPER
    assert "lease expired" in timed_out.data["error"]["message"]

    health = APIClient().get("/healthz").json()
    assert health["sweeper"]["state"] == "ok", health
    assert "restored the engine's periodic entry workflow-sweeper" in live.logs()
