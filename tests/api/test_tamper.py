"""Tamper evidence: the hash chain as stored, raw-SQL edits caught by `replay_execution
--verify` and `verify_logs` at the right seq, and the PostgreSQL trigger refusing UPDATE and
DELETE. Results are recorded through the worker's own service calls (no worker process:
what matters here is what reaches the table)."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from executions.engine.chain import first_break
from executions.kernel.log import linked_events
from executions.models import Attempt, Event, Execution, Task, Timer
from executions.services.attempts import attempt_claim, attempt_complete
from tests.factories import start
from tests.tampering import db_id, raw_sql, set_event_data

pytestmark = pytest.mark.django_db

CHAIN = {
    "nodes": [
        {"id": "a", "type": "function", "function": "std.echo", "input": {"x": "{{ input.x }}"}},
        {"id": "wait", "type": "delay", "seconds": 3600, "depends_on": ["a"]},
    ]
}


def run_first_node(output: object = None) -> Execution:
    """An execution whose node `a` a (simulated) worker completed with `output`."""
    execution = start(CHAIN, input={"x": 1.0})
    attempt = Attempt.objects.get(execution=execution, node_id="a")
    assert attempt_claim(attempt_id=attempt.pk, worker_id="w") is not None
    assert attempt_complete(
        attempt_id=attempt.pk, worker_id="w", output=output if output is not None else {"x": 1.0}
    )
    execution.refresh_from_db()
    return execution


def completed_seq(execution: Execution) -> int:
    return Event.objects.get(execution=execution, type="task_completed").seq


#: JSON a worker may return; PostgreSQL refuses NUL and lone surrogates in jsonb (an
#: engine error elsewhere), so they are left out here.
_TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=8)
outputs = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(output=outputs)
def test_the_chain_survives_the_database_round_trip_of_any_output(output) -> None:
    """Whatever JSON a worker records, the hash computed at append time is the one its
    stored (jsonb or text) form gives back: the canonical form is the stored form."""
    with transaction.atomic():
        execution = run_first_node({"value": output})
        found = first_break(linked_events(execution.pk), last_hash=execution.last_hash)
        assert found is None, (output, str(found))
        transaction.set_rollback(True)


def test_every_event_is_chained_and_the_execution_keeps_the_head() -> None:
    # Floats, big numbers and non-ASCII text survive the database round trip unchanged.
    execution = run_first_node({"ratio": 2.0, "big": 1e300, "tiny": 1e-7, "name": "Zoë"})
    rows = list(Event.objects.filter(execution=execution).order_by("seq"))
    assert len(rows) >= 5
    assert all(len(row.hash) == 64 for row in rows)
    assert len({row.hash for row in rows}) == len(rows)
    assert execution.last_hash == rows[-1].hash
    assert first_break(linked_events(execution.pk), last_hash=execution.last_hash) is None
    call_command("verify_logs", str(execution.pk))


def test_the_events_endpoint_shows_each_hash(django_user_model) -> None:
    execution = run_first_node()
    boss = django_user_model.objects.create_superuser("boss", "b@example.com", "pw-boss-1")
    client = APIClient()
    client.force_authenticate(boss)
    response = client.get(f"/executions/{execution.pk}/events")
    assert response.status_code == 200, response.content
    shown = [(e["seq"], e["hash"]) for e in response.json()["results"]]
    assert shown == list(Event.objects.filter(execution=execution).values_list("seq", "hash"))


@pytest.mark.tampered
def test_an_edited_worker_output_is_caught_at_its_seq(capsys, tmp_path) -> None:
    execution = run_first_node()
    clean = start(CHAIN, input={"x": 2})
    seq = completed_seq(execution)
    call_command("replay_execution", str(execution.pk), "--verify", "--quiet")
    set_event_data(execution.pk, seq, {"output": {"x": 1000000}})
    # The edit re-derives fine (a worker's output is a fact): only the chain can tell.
    with pytest.raises(CommandError, match=f"hash chain broken at seq {seq}:"):
        call_command("replay_execution", str(execution.pk), "--verify", "--quiet")
    report = tmp_path / "report.json"
    with pytest.raises(CommandError, match="1 execution"):
        call_command("verify_logs", "--all", "--json", str(report))
    out = capsys.readouterr().out
    assert f"{execution.pk} [chain] hash chain broken at seq {seq}" in out
    assert str(clean.pk) not in out
    body = json.loads(report.read_text())
    assert body["executions"] == 2
    assert body["events"] > 0
    assert body["events_per_second"] > 0
    chain = [p for p in body["problems"] if p["kind"] == "chain"]
    assert chain == [
        {
            "execution_id": str(execution.pk),
            "kind": "chain",
            "seq": seq,
            "message": chain[0]["message"],
        }
    ]
    # A rebuild never copies a tampered log into fresh rows.
    with pytest.raises(CommandError):
        call_command("verify_logs", str(execution.pk), "--rebuild")


@pytest.mark.tampered
def test_an_edited_decision_is_caught_by_the_chain_and_by_replay(capsys) -> None:
    execution = run_first_node()
    started = Event.objects.get(execution=execution, type="timer_started")
    set_event_data(
        execution.pk, started.seq, {"input": {"seconds": 1, "due_at": "2000-01-01T00:00:00+00:00"}}
    )
    with pytest.raises(CommandError, match="4 problem"):
        call_command("verify_logs", str(execution.pk))
    out = capsys.readouterr().out
    assert f"[chain] hash chain broken at seq {started.seq}" in out
    assert f"[decisions] divergence at seq {started.seq}" in out
    # The stored rows still hold the truth the edit removed from the log.
    assert "[projection] task wait.input" in out
    assert "[timers] delay timer wait#1: due" in out


@pytest.mark.tampered
def test_a_removed_last_event_and_a_forged_head_are_caught() -> None:
    execution = run_first_node()
    last = execution.last_seq
    raw_sql(
        "DELETE FROM executions_event WHERE execution_id = %s AND seq = %s",
        [db_id(execution.pk), last],
    )
    with pytest.raises(CommandError, match=f"hash chain broken at seq {last - 1}: the execution's"):
        call_command("replay_execution", str(execution.pk), "--verify", "--quiet")


@pytest.mark.skipif("connection.vendor != 'postgresql'")
@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE executions_event SET data = '{}' WHERE execution_id = %s",
        "DELETE FROM executions_event WHERE execution_id = %s",
    ],
)
def test_postgresql_refuses_update_and_delete_of_events(sql: str) -> None:
    execution = run_first_node()
    before = list(Event.objects.filter(execution=execution).values_list("seq", "data", "hash"))
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(sql, [str(execution.pk)])
    after = list(Event.objects.filter(execution=execution).values_list("seq", "data", "hash"))
    assert after == before


def test_verify_logs_finds_drifted_rows_and_rebuild_rewrites_them(capsys) -> None:
    execution = run_first_node()
    Task.objects.filter(execution=execution, node_id="a").update(status="failed")
    Attempt.objects.filter(execution=execution, node_id="a").update(status="running")
    Timer.objects.filter(execution=execution).delete()
    with pytest.raises(CommandError, match="3 problem"):
        call_command("verify_logs", str(execution.pk))
    out = capsys.readouterr().out
    assert "[projection] task a.status: stored 'failed', log 'succeeded'" in out
    assert "[attempts] a#1: stored running, log says succeeded" in out
    assert "[timers] delay timer wait#1: no row" in out
    call_command("verify_logs", str(execution.pk), "--rebuild")
    assert "rebuilt projections, attempts and timers of 1" in capsys.readouterr().out
    assert Task.objects.get(execution=execution, node_id="a").status == "succeeded"
    assert Attempt.objects.get(execution=execution, node_id="a").status == "succeeded"
    timer = Timer.objects.get(execution=execution, node_id="wait")
    assert timer.fired_at is None
    assert timer.kind == "delay"
    call_command("verify_logs", "--all")
    assert "ok: every checked log verifies" in capsys.readouterr().out


def test_verify_logs_refuses_bad_ids() -> None:
    with pytest.raises(CommandError, match="not an execution id"):
        call_command("verify_logs", "nope")
    with pytest.raises(CommandError, match="no execution"):
        call_command("verify_logs", "00000000-0000-0000-0000-000000000000")


def test_rebuild_recreates_missing_rows_and_removes_stray_ones(capsys) -> None:
    execution = run_first_node()
    Attempt.objects.filter(execution=execution).delete()
    stray = Timer.objects.get(execution=execution)
    Timer.objects.create(
        execution=execution, node_id="a", attempt=2, kind="retry", due_at=stray.due_at
    )
    with pytest.raises(CommandError, match="2 problem"):
        call_command("verify_logs", str(execution.pk))
    out = capsys.readouterr().out
    assert "[attempts] a#1: no row, log says succeeded" in out
    assert "[timers] retry timer a#2: not in the log" in out
    call_command("verify_logs", str(execution.pk), "--rebuild")
    (attempt,) = Attempt.objects.filter(execution=execution)
    assert (attempt.node_id, attempt.attempt, attempt.status) == ("a", 1, "succeeded")
    assert list(Timer.objects.filter(execution=execution).values_list("kind", "node_id")) == [
        ("delay", "wait")
    ]
