"""Records the golden histories (tests/golden/histories/) from real workers.

Skipped unless WORKFLOW_RECORD_GOLDEN=1: the recorded files are checked in, and
tests/golden/test_golden_histories.py replays them on every run. Record again only when
the event vocabulary changes on purpose, and say why in the commit:

    WORKFLOW_RECORD_GOLDEN=1 python -m pytest tests/integration/test_golden_record.py
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from executions.models import Event, Execution, Task, Timer
from executions.services import control, parking
from executions.services.signals import execution_signal
from tests.factories import make_version, start
from tests.golden import scenarios
from tests.integration.engine import wait_for
from tests.servers import http_server
from tests.waiting import eventually

HISTORIES = Path(__file__).resolve().parents[1] / "golden" / "histories"

pytestmark = pytest.mark.skipif(
    os.environ.get("WORKFLOW_RECORD_GOLDEN") != "1",
    reason="records golden histories only when WORKFLOW_RECORD_GOLDEN=1",
)


def dump(name: str, execution: Execution, definition: dict[str, Any], note: str) -> None:
    execution.refresh_from_db()
    events = Event.objects.filter(execution=execution).order_by("seq")
    tasks = Task.objects.filter(execution=execution).order_by("node_id")
    record = {
        "name": name,
        "note": note,
        "execution_id": str(execution.pk),
        "definition": definition,
        "last_hash": execution.last_hash,
        "events": [
            {
                "seq": e.seq,
                "type": e.type,
                "node_id": e.node_id,
                "attempt": e.attempt,
                "data": e.data,
                "timestamp": e.timestamp.isoformat(),
                "source": e.source,
                "hash": e.hash,
            }
            for e in events
        ],
        # What the API showed at the end (the projections), which folding the events must
        # give again.
        "expected": {
            "status": execution.status,
            "output": execution.output,
            "error": execution.error,
            "nodes": {
                t.node_id: {
                    "status": t.status,
                    "attempts": t.attempts,
                    "retry_count": t.retry_count,
                    "output": t.output,
                    "error": t.error,
                }
                for t in tasks
            },
        },
    }
    HISTORIES.mkdir(parents=True, exist_ok=True)
    path = HISTORIES / f"{name}.json"
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


def run(live, name: str, definition: dict[str, Any], note: str, input: Any = None) -> Execution:
    execution = start(definition, input or {})
    done = live.wait(execution.pk)
    dump(name, done, definition, note)
    return done


def test_record_golden_histories(live) -> None:
    def respond(request, seen) -> tuple[int, dict[str, Any]]:
        if request.path == "/flaky":  # 503 twice, then 200
            flaky = [r for r in seen if r.path == "/flaky"]
            return (200, {"ok": True}) if len(flaky) > 2 else (503, {"error": "busy"})
        if request.path == "/fixable":
            fixable = [r for r in seen if r.path == "/fixable"]
            return (200, {"fixed": True}) if len(fixable) > 1 else (500, {"error": "broken"})
        return 200, {"workspace": "ws-1"}

    with http_server(respond) as server:
        signup = scenarios.signup(server.url)
        done = run(live, "signup", signup, "function, http, delay, when, all_done", {"user_id": 7})
        assert done.status == "succeeded"
        replay = control.execution_replay(execution_id=done.pk, from_node="cool_off", by="golden")
        replayed = live.wait(replay.pk)
        dump("signup_replay", replayed, signup, "replay from cool_off: reused_from outputs")

        retried = run(live, "http_retries", scenarios.http_retries(server.url), "503, 503, 200")
        assert retried.status == "succeeded"

        fixable = scenarios.fixable(server.url)
        broken = live.wait(start(fixable).pk)
        assert broken.status == "failed"
        control.execution_retry(execution_id=broken.pk, by="golden")
        fixed = live.wait(broken.pk)
        assert fixed.status == "succeeded"
        dump("operator_retry", fixed, fixable, "failed for good, then retry_requested")

    for decision in ("approve", "reject"):
        execution = start(scenarios.APPROVAL)
        wait_for(execution, "sign_off", "waiting")
        control.signal_send(
            execution_id=execution.pk,
            node_id="sign_off",
            decision=decision,
            data={"ticket": 1},
            comment="golden",
            by="golden",
        )
        done = live.wait(execution.pk)
        dump(f"approval_{decision}", done, scenarios.APPROVAL, f"approval, {decision}d")

    child_name = f"golden-child-{uuid.uuid4().hex[:8]}"
    make_version(scenarios.CHILD, name=child_name)
    parent_definition = scenarios.parent(child_name)
    parent_done = run(live, "subworkflow_parent", parent_definition, "workflow node", {"x": 5})
    assert parent_done.status == "succeeded"
    child = Execution.objects.get(parent_execution=parent_done)
    dump("subworkflow_child", child, scenarios.CHILD, "the child of subworkflow_parent")

    done = run(live, "map", scenarios.MAP, "map, max_parallel 2", {"items": [1, 2, 3, 4, 5]})
    assert done.status == "succeeded"
    done = run(live, "compensation", scenarios.COMPENSATION, "strict failure, compensation")
    assert done.status == "failed"
    done = run(live, "timeout", scenarios.TIMEOUT, "timeout_seconds: task_timed_out")
    assert done.status == "failed"

    execution = start(scenarios.SLEEPER)
    wait_for(execution, "nap", "running")
    control.execution_cancel(execution_id=execution.pk, by="golden")
    done = live.wait(execution.pk)
    dump("cancel", done, scenarios.SLEEPER, "cancel while running")

    from executions.engine.events import Source
    from executions.services.containment import execution_fail_engine_error

    execution = start(scenarios.SLEEPER)
    wait_for(execution, "nap", "running")
    execution_fail_engine_error(
        execution_id=execution.pk,
        exc=RuntimeError("golden: an engine error"),
        where="golden",
        source=Source.SWEEPER,
    )
    done = live.wait(execution.pk)
    dump("engine_error", done, scenarios.SLEEPER, "engine_error ends the execution")


def test_record_pause_history(live) -> None:
    execution = start(scenarios.PAUSE)
    wait_for(execution, "nap", "running")
    control.execution_pause(execution_id=execution.pk, by="golden")
    eventually(
        lambda: Event.objects.filter(execution=execution, type="task_completed").exists(),
        30,
        "nap never finished",
    )
    # The delay's timer comes due while paused: its message has run and found it paused.
    live.timer_ran(Timer.objects.get(execution=execution, node_id="wait"))
    control.execution_resume(execution_id=execution.pk, by="golden")
    done = live.wait(execution.pk)
    assert done.status == "succeeded"
    dump("pause_resume", done, scenarios.PAUSE, "paused while running, resumed")


def test_record_fault_injected(live) -> None:
    """Recorded on its own (`-k fault_injected`), so adding it re-records no other file."""
    execution = start(scenarios.FAULTY, {}, faults=scenarios.FAULTS)
    done = live.wait(execution.pk, timeout=60)
    assert done.status == "succeeded"
    dump(
        "fault_injected",
        done,
        scenarios.FAULTY,
        "faults: duplicate delivery, a crash after the effect (attempt 1), delayed results",
    )


def test_record_waits(live) -> None:
    """Flow and time: approval_timed_out, and a signal node fed a signal sent early."""
    run(live, "approval_timeout", scenarios.APPROVAL_TIMEOUT, "approval on_timeout approve")
    execution = start(scenarios.SIGNAL)
    wait_for(execution, "gate", "waiting")
    execution_signal(execution_id=execution.pk, name="payment", data={"n": 1}, by="golden")
    control.signal_send(execution_id=execution.pk, node_id="gate", decision="approve")
    done = live.wait(execution.pk)
    dump("signal", done, scenarios.SIGNAL, "a named signal kept, then delivered to its node")


def test_record_workflow_timeout(live) -> None:
    """A definition's deadline: workflow_timed_out."""
    note = "timeout_seconds passes while a node sleeps: cancelled, compensated, failed"
    done = run(live, "workflow_timeout", scenarios.WORKFLOW_TIMEOUT, note)
    assert done.error["type"] == "WorkflowTimeout"


def test_record_parking(live) -> None:
    """Recorded on its own (`-k parking`), so adding it re-records no other file."""
    execution = start(scenarios.PARKING)
    wait_for(execution, "charge", "parked")
    parking.parked_task_retry(execution_id=execution.pk, node_id="charge", by="golden")
    eventually(
        lambda: Event.objects.filter(execution=execution, type="task_parked").count() == 2,
        30,
        "charge never parked again",
    )
    parking.parked_task_fail(execution_id=execution.pk, node_id="charge", by="golden")
    done = live.wait(execution.pk)
    assert done.status == "failed"
    dump("parking", done, scenarios.PARKING, "parked, retried, parked again, failed")


def test_record_rate_limited(live) -> None:
    """Recorded on its own (`-k rate_limited`), so adding it re-records no other file."""
    run(live, "rate_limited", scenarios.RATE_LIMITED, "a rate limit makes two calls wait")
