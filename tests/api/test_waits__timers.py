"""A wait answered before its timeout closes its `timeout` timer: the sweeper never fires
it, a late wake-up for it changes nothing, and verify_logs checks and rebuilds the row
from the log. No workers: answers are recorded through the services the API calls."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from executions.models import Execution, Timer
from executions.services import control
from executions.services.signals import execution_signal
from executions.services.sweep import sweep
from executions.services.timers import timer_fire
from tests.factories import start, timeline
from workflows import clock

pytestmark = pytest.mark.django_db

#: Still running once the wait is answered (its delay is a day away), so a stale timeout
#: timer would have something to fire into.
REST = {"id": "rest", "type": "delay", "seconds": 86400}


def flow(waiting: dict[str, Any]) -> dict[str, Any]:
    return {"nodes": [waiting, {**REST, "depends_on": [waiting["id"]]}]}


GATE = {"id": "gate", "type": "approval", "timeout_seconds": 60, "on_timeout": "fail"}
PAID = {"id": "paid", "type": "signal", "signal": "payment", "timeout_seconds": 60}


def approve(execution: Execution) -> None:
    control.signal_send(execution_id=execution.pk, node_id="gate", decision="approve")


def reject(execution: Execution) -> None:
    control.signal_send(execution_id=execution.pk, node_id="gate", decision="reject")


def pay(execution: Execution) -> None:
    execution_signal(execution_id=execution.pk, name="payment", data={"amount": 3})


CASES: list[tuple[dict[str, Any], Callable[[Execution], None]]] = [
    (GATE, approve),
    (GATE, reject),
    (PAID, pay),
]


def timeout_timer(execution: Execution, node_id: str) -> Timer:
    return Timer.objects.get(execution=execution, node_id=node_id, kind="timeout")


@pytest.mark.parametrize(("waiting", "answer"), CASES, ids=["approve", "reject", "signal"])
def test_an_answer_closes_the_timeout_and_a_late_fire_changes_nothing(
    waiting, answer, monkeypatch
) -> None:
    if answer is reject:  # a rejected gate fails the run: keep it going with its downstream
        waiting = {**waiting, "retry_policy": {"max_attempts": 1}}
    definition = flow(waiting) if answer is not reject else {"nodes": [waiting, REST]}
    execution = start(definition)
    node_id = waiting["id"]
    assert timeout_timer(execution, node_id).fired_at is None
    answer(execution)
    timer = timeout_timer(execution, node_id)
    assert timer.fired_at is not None
    execution.refresh_from_db()
    assert execution.status == "running"  # the delay still waits: a stale fire could land
    before = timeline(execution)

    later = timer.due_at + timedelta(hours=1)
    monkeypatch.setattr(clock, "now", lambda: later)
    assert sweep().timers_fired == 0
    assert timer_fire(timer_id=timer.pk) is False  # a duplicate wake-up message
    assert timeline(execution) == before
    call_command("verify_logs", str(execution.pk))


def test_a_kept_signal_delivered_as_the_node_starts_waiting_closes_its_new_timer() -> None:
    execution = start(
        {
            "nodes": [
                {"id": "gate", "type": "approval"},
                {**PAID, "depends_on": ["gate"]},
                {**REST, "depends_on": ["paid"]},
            ]
        }
    )
    pay(execution)  # kept: `paid` is not waiting yet
    assert not Timer.objects.filter(execution=execution, kind="timeout").exists()
    approve(execution)  # `paid` waits, gets its timer and the kept signal in one advance
    assert timeout_timer(execution, "paid").fired_at is not None
    assert timer_fire(timer_id=timeout_timer(execution, "paid").pk) is False
    call_command("verify_logs", str(execution.pk))


def test_verify_logs_finds_an_answered_wait_whose_timer_is_open_and_rebuild_closes_it(
    capsys,
) -> None:
    execution = start(flow(GATE))
    approve(execution)
    # As an answered wait's timer was left before this was fixed.
    Timer.objects.filter(execution=execution, kind="timeout").update(fired_at=None)
    with pytest.raises(CommandError, match="1 problem"):
        call_command("verify_logs", str(execution.pk))
    assert "[timers] timeout timer gate#1: closed in the log, open in the row" in (
        capsys.readouterr().out
    )
    call_command("verify_logs", str(execution.pk), "--rebuild")
    assert timeout_timer(execution, "gate").fired_at is not None
    # A lost row comes back closed too: the sweeper must not fire it.
    Timer.objects.filter(execution=execution, kind="timeout").delete()
    call_command("verify_logs", str(execution.pk), "--rebuild")
    assert timeout_timer(execution, "gate").fired_at is not None
    call_command("verify_logs", str(execution.pk))
    assert "ok: every checked log verifies" in capsys.readouterr().out
