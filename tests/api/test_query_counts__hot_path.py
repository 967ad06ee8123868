"""SQL statements per node on the hot path, pinned: a result arriving, recorded, and the
next node dispatched, as a worker runs it (its claim, its result, what runs after its
commit), in transactions that commit, so the state cache is warm as it is in a worker.

Counted: the statements the worker sends, not the transaction's BEGIN and COMMIT. On
PostgreSQL the unit's writes go out as one statement (executions/kernel/writes.py), the
result's own UPDATE goes with the lock (kernel/lock.py) and the next attempt is inserted
claimed (services/attempts.py); on SQLite (no inbox, no SKIP LOCKED) each goes on its
own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from executions import messages
from executions.definitions import definition_for
from executions.engine.state import NodeState
from executions.kernel import projections, writes
from executions.models import Attempt, Event, Execution
from executions.services.attempts import attempt_claim, attempt_complete_and_claim_next
from executions.services.start import execution_start
from executions.sqlnames import column
from executions.worker.lease import InlineKeeper
from executions.worker.runtime import run_attempt
from nodes.context import Claimed
from tests.factories import make_version

pytestmark = pytest.mark.django_db(transaction=True)

#: A chain's hop: the result and the next node's claim are one unit (eager dispatch): the
#: lock with the result's UPDATE, the next attempt's INSERT already claimed (the priority
#: check in it: services/attempts.py _INSERT_CLAIMED), the unit's writes (events,
#: execution, tasks, metric deltas). 8 before the writes went out as one, 4 before the
#: INSERT carried the claim.
CHAIN_HOP_STATEMENTS = 3
#: A fan-out's branch: its claim (one UPDATE, left in the inbox), then its result's unit
#: (the lock with the result's UPDATE, the inbox's claims, the unit's writes) and, once
#: the lock is let go, the look at the inbox every holder owes (kernel/lock.py). 11 before.
FAN_OUT_NODE_STATEMENTS = 5
#: Without an inbox each step waits for the lock and writes through the ORM.
CHAIN_HOP_STATEMENTS_SQLITE = 9
FAN_OUT_NODE_STATEMENTS_SQLITE = 13

BRANCHES = 6
CHAIN = {
    "nodes": [
        {"id": f"n{i}", "type": "function", "function": "std.noop"}
        | ({"depends_on": [f"n{i - 1}"]} if i else {})
        for i in range(6)
    ]
}
FAN_OUT = {
    "nodes": [
        {"id": "a", "type": "function", "function": "std.noop"},
        *[
            {"id": f"b{i}", "type": "function", "function": "std.noop", "depends_on": ["a"]}
            for i in range(BRANCHES)
        ],
        {
            "id": "z",
            "type": "function",
            "function": "std.noop",
            "depends_on": [f"b{i}" for i in range(BRANCHES)],
        },
    ]
}


def _pinned(postgresql: int, sqlite: int) -> int:
    return postgresql if connection.vendor == "postgresql" else sqlite


#: What is not counted: the transaction's own statements (a test's atomic() inside
#: another is a savepoint).
_TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE SAVEPOINT")


@contextmanager
def _statements() -> Iterator[list[str]]:
    """The statements sent inside the block (messages go nowhere: no broker here)."""
    sent: list[str] = []
    with messages.diverted(lambda *message: None), CaptureQueriesContext(connection) as seen:
        yield sent
    sent.extend(
        q["sql"]
        for q in seen.captured_queries
        if not q["sql"].lstrip().upper().startswith(_TRANSACTION_CONTROL)
    )


def _started(definition: dict[str, Any]) -> tuple[Execution, Claimed]:
    version = make_version(definition)
    definition_for(version.pk)  # parsed definitions are cached per process
    with messages.diverted(lambda *message: None):
        execution, _ = execution_start(version=version, input={})
        first = Attempt.objects.get(execution=execution, node_id=definition["nodes"][0]["id"])
        claimed = attempt_claim(attempt_id=first.pk, worker_id="w")
    assert claimed is not None
    return execution, claimed


def test_a_chain_s_hop_costs_a_fixed_number_of_statements() -> None:
    execution, claimed = _started(CHAIN)
    counts = []
    for hop in range(1, 6):
        with _statements() as sent:
            nxt = attempt_complete_and_claim_next(
                attempt_id=claimed.attempt_id, worker_id="w", output=hop, claimed=claimed
            )
        assert nxt is not None
        assert nxt.node.id == f"n{hop}"
        counts.append(len(sent))
        claimed = nxt
    print(f"\nchain: statements per hop {counts}")
    steady = counts[1:]  # the first hop also logs the first node's claim from the inbox
    assert max(steady) <= _pinned(CHAIN_HOP_STATEMENTS, CHAIN_HOP_STATEMENTS_SQLITE), counts
    kinds = Event.objects.filter(execution=execution).values_list("type", flat=True)
    assert list(kinds).count("task_started") == 6


def test_a_fan_out_s_branch_costs_a_fixed_number_of_statements() -> None:
    execution, claimed = _started(FAN_OUT)
    with messages.diverted(lambda *message: None):
        eager = attempt_complete_and_claim_next(
            attempt_id=claimed.attempt_id, worker_id="w", output=0, claimed=claimed
        )  # the first branch is claimed in a's unit, the others are published
    assert eager is not None
    assert eager.node.id == "b0"
    counts = []
    for branch in range(1, BRANCHES):  # b0's result schedules the join, last
        attempt = Attempt.objects.get(execution=execution, node_id=f"b{branch}")
        with _statements() as sent:
            mine = attempt_claim(attempt_id=attempt.pk, worker_id="w")
            assert mine is not None
            assert (
                attempt_complete_and_claim_next(
                    attempt_id=mine.attempt_id, worker_id="w", output=branch, claimed=mine
                )
                is None
            )
        counts.append(len(sent))
    print(f"\nfan-out: statements per branch {counts}")
    pinned = _pinned(FAN_OUT_NODE_STATEMENTS, FAN_OUT_NODE_STATEMENTS_SQLITE)
    assert max(counts) <= pinned, counts
    done = Event.objects.filter(execution=execution, type="task_completed").count()
    assert done == BRANCHES  # a and the five branches, each logged once


def test_a_fan_out_s_branch_as_its_message_runs_it_sends_no_look_at_its_end() -> None:
    """The branch as a worker's message runs it (run_task): the same statements as above,
    and no look at the end of the message, none being owed (its unit looked after its
    commit: kernel/lock.py, "The look at the end of a message")."""
    execution, claimed = _started(FAN_OUT)
    with messages.diverted(lambda *message: None):
        eager = attempt_complete_and_claim_next(
            attempt_id=claimed.attempt_id, worker_id="w", output=0, claimed=claimed
        )
    assert eager is not None
    counts = []
    for branch in range(1, BRANCHES):
        attempt = Attempt.objects.get(execution=execution, node_id=f"b{branch}")
        with _statements() as sent:
            run_attempt(attempt.pk, keeper=InlineKeeper())
        counts.append(len(sent))
    print(f"\nfan-out: statements per branch's message {counts}")
    pinned = _pinned(FAN_OUT_NODE_STATEMENTS, FAN_OUT_NODE_STATEMENTS_SQLITE)
    assert max(counts) <= pinned, counts
    done = Event.objects.filter(execution=execution, type="task_completed").count()
    assert done == BRANCHES


def test_the_one_statement_writes_name_every_projected_column() -> None:
    """The Task rows' statement is written out: a field task_fields gains must be in it."""
    statement = projections._TASK_CTES + projections._INSERT_MISSING_TASKS
    for name in projections.task_fields(NodeState("n")):
        assert f"v.{name}" in statement, name
    for name in (*projections.EXECUTION_FIELDS, *projections.BOOKKEEPING_FIELDS):
        assert column(Execution, name) in projections._UPDATE_EXECUTION_WITH_SNAPSHOT, name


def test_the_event_insert_names_every_column_of_an_event() -> None:
    """The events' statement is written out too: a column Event gains must be in it."""
    statement = writes._INSERT_EVENTS
    for field in Event._meta.concrete_fields:
        if field.primary_key:
            continue
        assert column(Event, field.name) in statement, field.name
        if field.name != "execution":  # the one value not taken from the JSON rows
            assert f"v.{field.column}" in statement, field.name
