"""Fault boundaries, in process against the real database: each boundary turns one
execution's exception into that execution's engine error and goes on with the others.

The trigger is a version row corrupted by raw SQL, so that parsing it raises wherever the
engine needs it (the realistic shape of "a bug or bad data inside one execution").
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from executions.models import Attempt, AttemptStatus, Execution, Timer
from executions.services import containment
from executions.services.attempts import attempt_claim, attempt_complete
from executions.services.containment import attempt_boundary
from executions.services.control import execution_retry
from executions.services.start import execution_start
from executions.services.sweep import sweep
from executions.tasks import fire_timer
from tests.factories import events, make_version, start
from tests.integration.corruption import corrupted_definition

GHOST = "ghost-host:999999:1"
SLEEPY = {
    "nodes": [
        {
            "id": "n",
            "type": "function",
            "function": "std.sleep",
            "input": {"seconds": 30},
        }
    ],
    "retry_policy": {"max_attempts": 1},
}


@pytest.fixture(autouse=True)
def no_backoff() -> Iterator[None]:
    containment.backoff._until.clear()
    yield
    containment.backoff._until.clear()


def expire(execution: Execution, seconds_ago: float) -> Attempt:
    attempt = Attempt.objects.get(execution=execution, node_id="n")
    assert attempt_claim(attempt_id=attempt.pk, worker_id=GHOST) is not None
    past = timezone.now() - timedelta(seconds=seconds_ago)
    Attempt.objects.filter(pk=attempt.pk).update(lease_expires_at=past)
    return attempt


def assert_engine_error(execution: Execution, where: str, broke: str) -> dict:
    execution.refresh_from_db()
    assert execution.status == "failed", execution.error
    error = execution.error
    assert error is not None
    assert error["type"] == "EngineError", error
    assert error["where"] == where, error
    assert error["message"].startswith(broke), error
    (fact,) = events(execution, "engine_error")
    assert fact.data == {"error": error}
    assert execution.last_seq == execution.decided_seq
    return error


@pytest.mark.django_db
def test_one_bad_item_neither_stops_the_sweep_nor_the_next_tick() -> None:
    bad, good = start(SLEEPY), start(SLEEPY)
    expire(bad, seconds_ago=20)  # listed first: the good one comes after it
    expire(good, seconds_ago=10)
    with corrupted_definition(bad.version_id):
        report = sweep()
        assert_engine_error(bad, "sweeper: attempt timeout", "DefinitionError")
        assert report.timed_out == 1
        good.refresh_from_db()
        assert good.status == "failed"
        assert good.error["cause"]["type"] == "Timeout"
        # Ended, the bad execution offers the sweeper nothing more.
        assert not Attempt.objects.filter(
            execution=bad, status__in=[AttemptStatus.SCHEDULED, AttemptStatus.RUNNING]
        ).exists()
        later = start(SLEEPY)
        expire(later, seconds_ago=1)
        assert sweep().timed_out == 1
        later.refresh_from_db()
        assert later.status == "failed"


@pytest.mark.django_db
def test_an_execution_whose_engine_error_cannot_be_recorded_is_backed_off(monkeypatch) -> None:
    bad, good = start(SLEEPY), start(SLEEPY)
    expire(bad, seconds_ago=20)
    calls = []

    def refuse(**kwargs):
        calls.append(kwargs["execution_id"])
        raise RuntimeError("the events table is gone")

    monkeypatch.setattr(containment, "execution_fail_engine_error", refuse)
    with corrupted_definition(bad.version_id):
        sweep()
        assert calls == [bad.pk]
        expire(good, seconds_ago=1)
        assert sweep().timed_out == 1  # the next tick skips the bad one, serves the rest
        assert calls == [bad.pk]
        containment.backoff._until.clear()  # the backoff has passed
        sweep()
        assert calls == [bad.pk, bad.pk]
    monkeypatch.undo()
    containment.backoff._until.clear()
    # With the definition readable again the stuck attempt times out the ordinary way.
    sweep()
    bad.refresh_from_db()
    assert bad.status == "failed"
    assert bad.error["cause"]["type"] == "Timeout"


@pytest.mark.django_db
def test_a_start_whose_definition_does_not_parse_fails_only_that_execution() -> None:
    version = make_version(SLEEPY)
    with corrupted_definition(version.pk):
        execution, created = execution_start(version=version, input={"x": 1}, by="alice")
        assert created
        assert_engine_error(execution, "start", "DefinitionError")
    assert execution.created_by == "alice"


@pytest.mark.django_db
def test_a_timer_that_breaks_fails_its_execution() -> None:
    version = make_version(SLEEPY)
    execution, _ = execution_start(
        version=version, input={}, start_at=timezone.now() + timedelta(hours=1)
    )
    timer = Timer.objects.get(execution=execution)
    Timer.objects.filter(pk=timer.pk).update(due_at=timezone.now() - timedelta(seconds=1))
    with corrupted_definition(version.pk):
        fire_timer(timer.pk)
        assert_engine_error(execution, "timer", "DefinitionError")
    # Marked fired: the sweeper does not fire it again on an ended execution.
    assert not Timer.objects.filter(execution=execution, fired_at__isnull=True).exists()
    assert sweep().timers_fired == 0


@pytest.mark.django_db
def test_an_advance_that_breaks_fails_its_execution_in_the_sweeper() -> None:
    # (The advance_execution task, which nothing enqueued, is gone: the sweeper is the
    # advance that runs outside a request or a result.)
    first, second = start(SLEEPY), start(SLEEPY)
    Execution.objects.filter(pk=first.pk).update(decided_seq=1)
    with corrupted_definition(first.version_id):
        assert sweep().advanced == 0
        assert_engine_error(first, "sweeper: advance", "DefinitionError")
    second.refresh_from_db()
    assert second.status == "running"  # only the broken one ended


@pytest.mark.django_db
def test_the_worker_boundary_fails_the_execution_of_an_unclaimable_attempt() -> None:
    from executions.worker.runtime import run_task

    execution = start(SLEEPY)
    attempt = Attempt.objects.get(execution=execution)
    with corrupted_definition(execution.version_id):
        run_task(attempt.pk)
        assert_engine_error(execution, "worker", "DefinitionError")
    attempt.refresh_from_db()
    assert attempt.status == AttemptStatus.CANCELLED
    # The cause fixed (the row readable again), an operator's retry runs the node afresh.
    execution_retry(execution_id=execution.pk, by="ops")
    execution.refresh_from_db()
    assert execution.status == "running"
    assert execution.error is None
    retried = Attempt.objects.get(execution=execution, attempt=2)
    assert retried.status == AttemptStatus.SCHEDULED


@pytest.mark.django_db
def test_an_output_the_database_refuses_fails_only_its_execution() -> None:
    """A worker's result that PostgreSQL cannot store (a NUL character in jsonb): the
    DataError is caught at the worker's boundary and ends only that execution."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite stores a NUL character; PostgreSQL's jsonb refuses it")
    execution, other = start(SLEEPY), start(SLEEPY)
    attempt = Attempt.objects.get(execution=execution)
    assert attempt_claim(attempt_id=attempt.pk, worker_id=GHOST) is not None
    with attempt_boundary(attempt.pk):  # as run_task holds it around the result
        attempt_complete(attempt_id=attempt.pk, worker_id=GHOST, output={"text": "a\x00b"})
    error = assert_engine_error(execution, "worker", "DataError: unsupported Unicode escape")
    assert "\\u0000 cannot be converted to text" in error["message"]
    (cancelled,) = events(execution, "task_cancelled", "n")
    assert cancelled.attempt == 1
    assert not events(execution, "task_completed")
    attempt.refresh_from_db()
    assert attempt.status == AttemptStatus.CANCELLED
    other.refresh_from_db()
    assert other.status == "running"
    assert not events(other, "engine_error")


@pytest.mark.django_db
def test_a_phase_that_breaks_leaves_the_other_phases_running(monkeypatch) -> None:
    def broken(**kwargs):
        raise RuntimeError("a bug in the child-notice query")

    monkeypatch.setattr("executions.services.sweep.children_pending_notice", broken)
    execution, undecided = start(SLEEPY), start(SLEEPY)
    expire(execution, seconds_ago=1)
    Execution.objects.filter(pk=undecided.pk).update(decided_seq=1)
    report = sweep()
    assert report.timed_out == 1
    # The phase after the broken one ran too.
    assert report.advanced == 1
    undecided.refresh_from_db()
    assert undecided.decided_seq == undecided.last_seq


@pytest.mark.django_db
def test_a_schedule_fire_on_a_broken_version_fails_only_that_execution(monkeypatch) -> None:
    from executions.schedules.services import schedule_create
    from executions.schedules.tasks import run_schedule

    version = make_version(SLEEPY)
    schedule = schedule_create(workflow=version.workflow, cron="* * * * *")
    tick = timezone.now().replace(second=30)
    monkeypatch.setattr("workflows.clock.now", lambda: tick)
    with corrupted_definition(version.pk):
        fired = run_schedule(str(schedule.pk))
        assert fired is not None
        execution = Execution.objects.get(pk=fired)
        assert_engine_error(execution, "start", "DefinitionError")
    assert execution.engine_key.startswith(f"schedule:{schedule.pk}:")
    assert execution.created_by == f"schedule:{schedule.pk}"
    assert run_schedule(str(schedule.pk)) == fired  # the same tick: still that one


@pytest.mark.django_db
def test_post_executions_on_a_broken_version_is_201_with_a_failed_execution(
    django_user_model,
) -> None:
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    root = django_user_model.objects.create_superuser(username="root", password="pw-root")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=root).key}")
    version = make_version(SLEEPY)
    with corrupted_definition(version.pk):
        response = client.post(
            "/executions", {"workflow": version.workflow.name, "input": {}}, format="json"
        )
        assert response.status_code == 201, response.content
        body = response.json()
        assert body["status"] == "failed"
        assert body["error"]["type"] == "EngineError"
        assert_engine_error(Execution.objects.get(pk=body["id"]), "start", "DefinitionError")
