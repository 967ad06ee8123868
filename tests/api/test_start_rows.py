"""A start inserts the execution and its Task rows once, as decided (services/start.py,
projections.py): the same rows, in the same order, as creating them pending and then
projecting the first decision onto them; held and start_at executions keep theirs pending."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from executions import messages
from executions.definitions import definition_for
from executions.engine.state import ExecutionState
from executions.kernel import advance as advance_module
from executions.kernel.log import state_now
from executions.kernel.projections import differences
from executions.kernel.writes import ROWS_IN_ONE
from executions.models import Attempt, Execution, Task
from executions.services import start as start_module
from executions.services.start import execution_start
from tests.factories import make_version
from workflows.dsl.concurrency import ConcurrencyKeyError

pytestmark = pytest.mark.django_db

FAN = {
    "nodes": [
        {"id": "z", "type": "function", "function": "std.noop"},
        {"id": "a", "type": "function", "function": "std.noop"},
        {"id": "m", "type": "map", "items": "{{ input.items }}", "max_parallel": 2,
         "node": {"type": "function", "function": "std.noop"}},
        {"id": "end", "type": "function", "function": "std.noop", "depends_on": ["z", "a"]},
    ]
}  # fmt: skip


def _rows(execution: Execution) -> list[tuple[str, str, str, int]]:
    tasks = Task.objects.filter(execution=execution).order_by("id")
    return [(t.node_id, t.type, t.status, t.attempts) for t in tasks]


def test_the_rows_of_a_start_are_inserted_as_decided() -> None:
    version = make_version(FAN)
    execution, created = execution_start(version=version, input={"items": [1, 2, 3]})
    assert created
    stored = Execution.objects.get(pk=execution.pk)
    assert stored.status == "running"
    assert stored.last_seq == stored.decided_seq > 1
    assert stored.started_at is not None
    assert stored.created_at <= stored.started_at
    # Definition order first (untouched ones pending), then the map's scheduled items.
    assert _rows(execution) == [
        ("z", "function", "scheduled", 1),
        ("a", "function", "scheduled", 1),
        ("m", "map", "running", 1),
        ("end", "function", "pending", 0),
        ("m[0]", "function", "scheduled", 1),
        ("m[1]", "function", "scheduled", 1),
    ]
    assert differences(stored, state_now(stored)) == []
    assert not execution.tasks_unwritten


def test_held_and_later_starts_write_their_rows_pending_at_once() -> None:
    later = timezone.now() + timedelta(hours=1)
    version = make_version({"nodes": [{"id": "only", "type": "function", "function": "std.noop"}]})
    execution, _ = execution_start(version=version, input={}, start_at=later)
    stored = Execution.objects.get(pk=execution.pk)
    assert (stored.status, stored.last_seq) == ("pending", 0)
    assert _rows(execution) == [("only", "function", "pending", 0)]
    assert differences(stored, ExecutionState(str(stored.pk))) == []


def test_a_start_that_fails_is_written_failed(monkeypatch) -> None:
    version = make_version({"nodes": [{"id": "only", "type": "function", "function": "std.noop"}]})
    definition_for(version.pk)

    def broken(*args, **kwargs):
        raise RuntimeError("decide broke")

    monkeypatch.setattr(advance_module, "record_and_advance", broken)
    execution, _ = execution_start(version=version, input={})
    stored = Execution.objects.get(pk=execution.pk)
    assert stored.status == "failed"
    assert "decide broke" in str(stored.error)


LIMITED = {
    "concurrency": {"key": "{{ input.customer }}", "limit": 1},
    "nodes": [{"id": "only", "type": "function", "function": "std.noop"}],
}


def test_the_concurrency_key_is_rendered_once(monkeypatch) -> None:
    version = make_version(LIMITED)
    calls: list[object] = []
    real = start_module.render_key

    def counted(spec, input):
        calls.append(input)
        return real(spec, input)

    monkeypatch.setattr(start_module, "render_key", counted)
    execution, _ = execution_start(version=version, input={"customer": "acme"}, key_errors=True)
    assert len(calls) == 1
    assert Execution.objects.get(pk=execution.pk).concurrency_key == "acme"
    with pytest.raises(ConcurrencyKeyError):
        execution_start(version=version, input={}, key_errors=True)
    # Without key_errors (a schedule, a trigger): a failed execution names it.
    failed, _ = execution_start(version=version, input={})
    assert Execution.objects.get(pk=failed.pk).status == "failed"


def test_a_start_s_messages_name_the_attempts_it_inserted(
    django_capture_on_commit_callbacks,
) -> None:
    """The attempts go in with the start's other rows (one statement on PostgreSQL), and
    each run_task message carries the id the database gave its row."""
    version = make_version(FAN)
    sent: list[tuple[str, tuple[Any, ...]]] = []
    sink = messages.diverted(lambda name, args, countdown: sent.append((name, args)))
    with sink, django_capture_on_commit_callbacks(execute=True):
        execution, _ = execution_start(version=version, input={"items": [1, 2, 3]})
    rows = dict(
        Attempt.objects.filter(execution=execution).values_list("pk", "node_id").order_by("pk")
    )
    assert sorted(rows.values()) == ["a", "m[0]", "m[1]", "z"]
    assert sorted(args[0] for name, args in sent if name == messages.RUN_TASK) == sorted(rows)
    assert not execution._state.adding  # saved: a later save updates the row


def test_a_wide_start_writes_every_row() -> None:
    """More rows than go into the start's one statement are inserted as before (ORM
    batches) beside it: the same rows either way."""
    width = ROWS_IN_ONE + 20
    nodes = [{"id": f"n{i}", "type": "function", "function": "std.noop"} for i in range(width)]
    execution, _ = execution_start(version=make_version({"nodes": nodes}), input={})
    stored = Execution.objects.get(pk=execution.pk)
    assert Task.objects.filter(execution=execution, status="scheduled").count() == width
    assert Attempt.objects.filter(execution=execution).count() == width
    assert differences(stored, state_now(stored)) == []
