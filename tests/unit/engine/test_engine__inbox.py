"""The inbox's pure part (executions/engine/inbox.py): facts in the order they happened,
each admitted only while the log still wants it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from executions.engine import inbox
from executions.engine.events import EventType

T0 = datetime(2026, 11, 30, 12, tzinfo=UTC)


def row(pk: int, claimed: float | None, finished: float | None, status: str) -> inbox.Row:
    at = lambda s: None if s is None else T0 + timedelta(seconds=s)  # noqa: E731
    result = {"output": pk} if finished is not None else None
    return inbox.Row(pk, f"n{pk}", 1, status, "w", at(claimed), at(finished), result)


def test_facts_come_in_the_order_they_happened_a_claim_before_its_result() -> None:
    rows = [row(1, 0.0, 5.0, "succeeded"), row(2, 1.0, 2.0, "failed"), row(3, 3.0, None, "running")]
    order = [(f.decision.type, f.decision.node_id) for f in inbox.facts(rows)]
    assert order == [
        (EventType.TASK_STARTED, "n1"),
        (EventType.TASK_STARTED, "n2"),
        (EventType.TASK_FAILED, "n2"),
        (EventType.TASK_STARTED, "n3"),
        (EventType.TASK_COMPLETED, "n1"),
    ]


def test_a_result_stamped_before_its_claim_still_comes_after_it() -> None:
    """The worker's clock stepped back between claim and result: the result would sort
    first, be refused (the node not yet running) and be lost; it is held at its claim."""
    facts = inbox.facts([row(1, 10.0, 9.0, "succeeded")])
    assert [f.decision.type for f in facts] == [EventType.TASK_STARTED, EventType.TASK_COMPLETED]
    assert facts[1].at == facts[0].at
