"""Approval timeouts and named signals on real workers, timers and the API."""

from __future__ import annotations

from typing import Any

from django.core.management import call_command

from executions.models import Execution, Task, Timer
from executions.services import control
from tests.factories import events, start
from tests.integration.engine import operator_client as api
from tests.integration.engine import wait_for


def verified(*executions: Execution) -> None:
    """verify_logs: chain, decisions and every row (timers included) agree with the log."""
    call_command("verify_logs", *[str(e.pk) for e in executions])


def approval(on_timeout: str | None) -> dict[str, Any]:
    node: dict[str, Any] = {
        "id": "sign_off",
        "type": "approval",
        "timeout_seconds": 1,
        "retry_policy": {"max_attempts": 1},
    }
    if on_timeout:
        node["on_timeout"] = on_timeout
    after = {"id": "ship", "type": "function", "function": "std.echo", "depends_on": ["sign_off"]}
    return {"nodes": [node, {**after, "input": "{{ nodes.sign_off.output }}"}]}


def test_an_unanswered_approval_times_out_as_on_timeout_says(live) -> None:
    started = {name: start(approval(name)) for name in (None, "approve", "fail")}
    done = {name: live.wait(e.pk) for name, e in started.items()}
    assert {name: e.status for name, e in done.items()} == {
        None: "failed",
        "approve": "succeeded",
        "fail": "failed",
    }
    for name, execution in done.items():
        (timed_out,) = events(execution, "approval_timed_out", "sign_off")
        assert timed_out.data == {"on_timeout": name or "reject", "timeout_seconds": 1.0}
    rejected = Task.objects.get(execution=done[None], node_id="sign_off")
    assert rejected.error["type"] == "Rejected"
    assert events(done["fail"], "task_timed_out", "sign_off")
    shipped = Task.objects.get(execution=done["approve"], node_id="ship")
    assert shipped.output["approved"] is True
    assert shipped.output["timed_out"] is True
    timer = Timer.objects.get(execution=done["approve"], kind="timeout")
    assert timer.fired_at is not None
    verified(*done.values())


def test_an_answer_in_time_wins_over_the_timeout(live) -> None:
    definition = approval("fail")
    definition["nodes"][0]["timeout_seconds"] = 3600
    execution = start(definition)
    wait_for(execution, "sign_off", "waiting")
    control.signal_send(execution_id=execution.pk, node_id="sign_off", decision="approve")
    done = live.wait(execution.pk)
    assert done.status == "succeeded"
    assert events(done, "approval_timed_out") == []
    # The answer closed the timeout: the sweeper never fires it into the log.
    assert Timer.objects.get(execution=done, kind="timeout").fired_at is not None
    assert events(done, "timer_fired") == []
    verified(done)


def signal_flow() -> dict[str, Any]:
    return {
        "nodes": [
            {"id": "gate", "type": "approval"},
            {"id": "paid", "type": "signal", "signal": "payment", "depends_on": ["gate"]},
            {
                "id": "receipt",
                "type": "function",
                "function": "std.echo",
                "depends_on": ["paid"],
                "input": {"amount": "{{ nodes.paid.output.amount }}"},
            },
        ]
    }


def test_a_signal_sent_before_the_node_waits_is_kept_for_it(live) -> None:
    client = api()
    execution = start(signal_flow())
    wait_for(execution, "gate", "waiting")
    url = f"/executions/{execution.pk}/signals/payment"
    response = client.post(url, {"data": {"amount": 12}}, format="json")
    assert response.status_code == 202, response.content
    assert Task.objects.get(execution=execution, node_id="paid").status == "pending"
    control.signal_send(execution_id=execution.pk, node_id="gate", decision="approve")
    done = live.wait(execution.pk)
    assert done.status == "succeeded"
    assert Task.objects.get(execution=done, node_id="receipt").output == {"amount": 12}
    # The API's fact has no node; the engine's delivery names the node.
    received = [(e.node_id, e.source) for e in events(done, "signal_received")]
    assert received == [(None, "api"), ("gate", "api"), ("paid", "engine")]
    assert client.post(url, {}, format="json").status_code == 409  # it ended
    verified(done)


def test_a_signal_to_a_waiting_node_is_its_output(live) -> None:
    client = api()
    definition = {"nodes": [{"id": "paid", "type": "signal", "signal": "payment"}]}
    execution = start(definition)
    wait_for(execution, "paid", "waiting")
    missing = client.post(f"/executions/{execution.pk}/signals/nobody", {}, format="json")
    assert missing.status_code == 404
    assert "nobody" in missing.json()["detail"]
    bad = client.post(f"/executions/{execution.pk}/signals/payment", [1], format="json")
    assert bad.status_code == 400
    response = client.post(
        f"/executions/{execution.pk}/signals/payment", {"data": [1, 2]}, format="json"
    )
    assert response.status_code == 202
    done = live.wait(execution.pk)
    assert (done.status, done.output) == ("succeeded", {"paid": [1, 2]})
    verified(done)


def test_a_signal_node_that_hears_nothing_times_out(live) -> None:
    node = {
        "id": "paid",
        "type": "signal",
        "signal": "payment",
        "timeout_seconds": 1,
        "retry_policy": {"max_attempts": 1},
    }
    done = live.wait(start({"nodes": [node]}).pk)
    assert done.status == "failed"
    assert done.error["cause"]["message"] == "no signal 'payment' within 1 seconds"
    verified(done)
