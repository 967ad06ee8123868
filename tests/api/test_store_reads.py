"""The store's log readers (log.log_rows and what reads through it) give exactly what the
ORM gives: the same rows in seq order, the same values (aware UTC datetimes, decoded JSON),
across page boundaries and with bounds."""

from __future__ import annotations

import pytest

from executions.engine.chain import first_break
from executions.engine.events import Event
from executions.kernel import log
from executions.models import Attempt, Execution
from executions.services.attempts import attempt_claim, attempt_complete
from tests.factories import start

pytestmark = pytest.mark.django_db

CHAIN = {
    "nodes": [
        {"id": "a", "type": "function", "function": "std.echo", "input": {"x": "{{ input.x }}"}},
        {"id": "b", "type": "function", "function": "std.echo", "depends_on": ["a"]},
        {"id": "c", "type": "function", "function": "std.echo", "depends_on": ["b"]},
    ]
}


def _run_all() -> Execution:
    execution = start(CHAIN, input={"x": [1.5, {"é": None}]})
    for node in ("a", "b", "c"):
        attempt = Attempt.objects.get(execution=execution, node_id=node)
        assert attempt_claim(attempt_id=attempt.pk, worker_id="w") is not None
        assert attempt_complete(attempt_id=attempt.pk, worker_id="w", output={"n": node, "f": 2.0})
    execution.refresh_from_db()
    return execution


def _orm_events(execution_id, **bounds):
    return [log.to_engine(row) for row in log.events_of(execution_id, **bounds)]


@pytest.mark.parametrize("page", [1, 2, 3, 5000])
@pytest.mark.parametrize(
    "bounds", [{}, {"after_seq": 2}, {"upto_seq": 5}, {"after_seq": 1, "upto_seq": 4}]
)
def test_the_readers_give_what_the_orm_gives(monkeypatch, page: int, bounds: dict) -> None:
    execution = _run_all()
    assert execution.last_seq > 6
    monkeypatch.setattr(log, "LOG_PAGE", page)
    expected = _orm_events(execution.pk, **bounds)
    rows = list(log.log_rows(execution.pk, log.LOG_COLUMNS, **bounds))
    got = [Event.stored(*row[:-1]) for row in rows]
    assert got == expected
    for mine, theirs in zip(got, expected, strict=True):
        assert mine.timestamp.tzinfo is theirs.timestamp.tzinfo
        assert type(mine.data) is type(theirs.data)
    if not bounds:
        assert log.engine_events(execution.pk) == expected
        events, links = log.verifiable_log(execution.pk)
        assert events == expected
        assert first_break(links, last_hash=execution.last_hash) is None
        assert first_break(log.linked_events(execution.pk), last_hash=execution.last_hash) is None
        assert log.state_at(execution.pk) == log.load_state(execution)
