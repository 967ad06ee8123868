"""SQL queries per unit of engine work, pinned: a regression fails CI, not a benchmark.

One node's life cycle (start, claim, result + advance) costs a fixed number of queries,
and one advance costs the same at 10 and at 1,000 events of history.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from bench.run import RETRY_FOREVER, synth_history
from executions.definitions import definition_for
from executions.engine.fold import apply_event, fold
from executions.engine.state import ExecutionState
from executions.kernel import inbox
from executions.kernel.advance import execution_advance
from executions.kernel.projections import create_tasks, project
from executions.models import Attempt, Event, Execution
from executions.services.attempts import (
    attempt_claim,
    attempt_complete,
    attempt_complete_and_claim_next,
)
from executions.services.start import execution_start
from tests.factories import make_version
from workflows.dsl.limits import overridden

pytestmark = pytest.mark.django_db

#: Pinned counts. Lower them when an optimisation saves a query; never raise them silently.
#: execution_start of a two-node workflow: BEGIN, one statement, COMMIT. The statement
#: inserts the events, the attempt, the execution, its Task rows and the metrics row
#: (kernel/writes.py), each once, as decided (kernel/projections.py): 7 before, when each
#: was an INSERT of its own (10 before that, when the execution and its Task rows were
#: inserted and then updated).
START_QUERIES = 3
#: Where a unit's writes are not one statement (SQLite): the five INSERTs of their own.
START_QUERIES_ORM = 7
#: The SELECT and the conditional UPDATE: no lock, no unit of work; its task_started goes
#: in with the result (executions/kernel/inbox.py). 10 before, when each claim was a unit, as it
#: still is where there is no inbox (SQLite: no SKIP LOCKED). 1 since the SELECT and the
#: UPDATE are one statement (services/attempts.py _claim_in_one).
CLAIM_QUERIES = 1
CLAIM_QUERIES_UNDER_THE_LOCK = 10


def claim_queries() -> int:
    return CLAIM_QUERIES if inbox.enabled() else CLAIM_QUERIES_UNDER_THE_LOCK


#: 12 before, +1: the unit reads and clears the inbox (the claim) in one statement. 8 since
#: the unit's writes go out as one statement (executions/kernel/writes.py) and the result's
#: UPDATE with the lock (kernel/lock.py).
COMPLETE_QUERIES = 8
#: A success that claims the execution's next attempt (eager dispatch): one unit of work,
#: so one INSERT of the events and one UPDATE of the execution for both (16 before; 14
#: before the inbox, +1 for the claim of the attempt that finished, logged here; -1: the
#: next attempt is picked and claimed by one UPDATE ... RETURNING). 9 since the writes and
#: the result's UPDATE went in with others, as COMPLETE_QUERIES.
COMPLETE_AND_CLAIM_NEXT_QUERIES = 9
#: 9 since each unit of work that commits events inserts one row of metric deltas with them
#: (executions/metrics/tally.py), which made a /metrics scrape independent of the history's size;
#: the counts above had room for it.
#: 10 since a unit that waited for the lock (a timer, an API call) reads the inbox with a
#: statement of its own: what the lock's SELECT could say would be from before the wait.
#: 7 since the unit's writes go out as one statement.
ADVANCE_QUERIES = 7
#: A map item's result, which schedules the next item (its Task row created then), and
#: logs the item's claim (13 before the inbox, when the claim cost 10 of its own; 14, then 8
#: since the unit's writes, the new item's Task row among them, go out as one statement).
MAP_ITEM_COMPLETE_QUERIES = 8
#: POST /executions of a one-node workflow, the whole request: the token with its user and
#: the user's and the groups' permissions (1: workflows/rest/auth.py; it was three), the version
#: with its workflow (1: one query for "id or name, pinned or latest"), then
#: execution_start (3, as START_QUERIES). 9 before, 13 before that, 15 before that.
POST_START_QUERIES = 5
#: On SQLite the token's permissions are DRF's stock three reads (workflows/rest/auth.py),
#: and the start's writes five INSERTs.
POST_START_QUERIES_SQLITE = 2 + 2 + START_QUERIES_ORM


def start_queries() -> int:
    return START_QUERIES if connection.vendor == "postgresql" else START_QUERIES_ORM


ONE_NODE = {"nodes": [{"id": "only", "type": "function", "function": "std.noop"}]}
TWO_NODES = {
    "nodes": [
        {"id": "a", "type": "function", "function": "std.noop"},
        {"id": "b", "type": "function", "function": "std.noop", "depends_on": ["a"]},
    ]
}


def test_one_node_life_cycle(django_assert_max_num_queries) -> None:
    version = make_version(TWO_NODES)
    definition_for(version.pk)  # parsed definitions are cached per process
    with django_assert_max_num_queries(start_queries()):
        execution, _ = execution_start(version=version, input={})
    attempt = Attempt.objects.get(execution=execution, node_id="a")
    with django_assert_max_num_queries(claim_queries()):
        claimed = attempt_claim(attempt_id=attempt.pk, worker_id="w")
    assert claimed is not None
    # The result, and the advance it triggers (which schedules b), in one transaction.
    with django_assert_max_num_queries(COMPLETE_QUERIES):
        assert attempt_complete(attempt_id=attempt.pk, worker_id="w", output=None)
    assert Attempt.objects.filter(execution=execution, node_id="b").exists()


def test_post_executions_costs_a_fixed_number_of_queries(api) -> None:
    version = make_version(ONE_NODE, name="one-node")
    definition_for(version.pk)
    assert api.post("/executions", {"workflow": "one-node"}, format="json").status_code == 201
    with CaptureQueriesContext(connection) as captured:
        response = api.post("/executions", {"workflow": "one-node"}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["workflow"] == "one-node"
    queries = [q["sql"] for q in captured.captured_queries]
    pinned = POST_START_QUERIES if connection.vendor == "postgresql" else POST_START_QUERIES_SQLITE
    assert len(queries) <= pinned, "\n".join(queries)
    workflow_reads = [q for q in queries if "workflows_workflowdefinition" in q]
    assert len(workflow_reads) <= 1, workflow_reads  # in the version's query, never again
    updates = [q for q in queries if q.lstrip().upper().startswith("UPDATE")]
    assert not updates, updates  # every row of the start inserted as decided
    if connection.vendor == "postgresql":
        # The start's rows in one statement, between BEGIN and COMMIT.
        writes = [q for q in queries if q.lstrip().upper().startswith(("INSERT", "WITH"))]
        assert len(writes) == 1, writes


def test_eager_dispatch_claims_the_next_attempt_in_the_same_unit_of_work(
    django_assert_max_num_queries,
) -> None:
    version = make_version(TWO_NODES)
    definition_for(version.pk)
    execution, _ = execution_start(version=version, input={})
    attempt = Attempt.objects.get(execution=execution, node_id="a")
    assert attempt_claim(attempt_id=attempt.pk, worker_id="w") is not None
    with django_assert_max_num_queries(COMPLETE_AND_CLAIM_NEXT_QUERIES):
        claimed = attempt_complete_and_claim_next(attempt_id=attempt.pk, worker_id="w", output=1)
    assert claimed is not None
    assert claimed.node.id == "b"
    assert claimed.input is None
    kinds = list(Event.objects.filter(execution=execution).order_by("seq").values_list("type"))
    assert [k for (k,) in kinds][-3:] == ["task_completed", "task_scheduled", "task_started"]
    execution.refresh_from_db()
    assert execution.decided_seq == execution.last_seq == len(kinds)
    assert Attempt.objects.get(pk=claimed.attempt_id).status == "running"


def test_a_duplicate_claim_takes_no_lock(django_assert_max_num_queries) -> None:
    execution, _ = execution_start(version=make_version(ONE_NODE), input={})
    attempt = Attempt.objects.get(execution=execution)
    assert attempt_claim(attempt_id=attempt.pk, worker_id="w") is not None
    with django_assert_max_num_queries(3):  # savepoint, select, release
        assert attempt_claim(attempt_id=attempt.pk, worker_id="w2") is None


def _with_history(size: int) -> tuple[Execution, ExecutionState]:
    """An execution whose log is `size` events of a node failing and retrying."""
    # A history longer than WORKFLOW_MAX_ATTEMPTS lets a definition be (operator retries).
    with overridden(max_attempts=10**9):
        version = make_version(RETRY_FOREVER)
    definition = definition_for(version.pk)
    execution = Execution.objects.create(workflow_id=version.workflow_id, version=version)
    events = synth_history(definition, str(execution.pk), size)
    state = ExecutionState(str(execution.pk))
    for event in events:
        apply_event(state, event)
    snapshot_seq = size - size % 50
    if snapshot_seq:
        execution.snapshot = fold(events[:snapshot_seq], execution_id=str(execution.pk)).to_dict()
    execution.snapshot_seq = snapshot_seq
    execution.last_seq = execution.decided_seq = size
    create_tasks(execution, definition)
    project(execution, state, ["f"])
    Event.objects.bulk_create(
        Event(
            execution=execution,
            seq=e.seq,
            type=e.type,
            node_id=e.node_id,
            attempt=e.attempt,
            data=e.data,
            timestamp=e.timestamp,
            source=e.source,
        )
        for e in events
    )
    return execution, state


def _advance_queries(size: int) -> list[dict]:
    execution, state = _with_history(size)
    node = state.nodes["f"]
    assert node.next_retry_at is not None
    Event.objects.create(
        execution=execution, seq=size + 1, type="timer_fired", node_id="f",
        attempt=node.attempt + 1, source="timer", timestamp=node.next_retry_at,
        data={"kind": "retry", "due_at": node.next_retry_at.isoformat()},
    )  # fmt: skip
    Execution.objects.filter(pk=execution.pk).update(last_seq=size + 1)
    with CaptureQueriesContext(connection) as captured:
        assert execution_advance(execution_id=execution.pk) == 1  # schedules the next attempt
    return captured.captured_queries


def test_one_advance_costs_the_same_queries_at_any_history_length() -> None:
    short, long = len(_advance_queries(10)), len(_advance_queries(1_000))
    assert short == long, f"advance: {short} queries at 10 events, {long} at 1,000"
    assert long <= ADVANCE_QUERIES, f"advance: {long} queries (pinned at {ADVANCE_QUERIES})"


def test_the_tail_of_the_log_is_read_without_a_server_side_cursor() -> None:
    """A cursor costs three round trips (DECLARE, FETCH, CLOSE; only the first is counted
    here) for the one or two events an advance folds: store.log_rows reads a page."""
    queries = [q["sql"] for q in _advance_queries(60)]
    assert not [q for q in queries if q.lstrip().upper().startswith("DECLARE")], queries


MAP = {
    "nodes": [
        {
            "id": "m",
            "type": "map",
            "items": "{{ input.items }}",
            "max_parallel": 2,
            "node": {"type": "function", "function": "std.noop"},
        }
    ]
}


def _map_item_queries(items: int) -> tuple[int, int]:
    """Queries to claim and to complete a map's first item, at `items` items."""
    execution, _ = execution_start(version=make_version(MAP), input={"items": list(range(items))})
    attempt = Attempt.objects.get(execution=execution, node_id="m[0]")
    with CaptureQueriesContext(connection) as claim:
        assert attempt_claim(attempt_id=attempt.pk, worker_id="w") is not None
    with CaptureQueriesContext(connection) as complete:
        assert attempt_complete(attempt_id=attempt.pk, worker_id="w", output=None)
    assert Attempt.objects.filter(execution=execution, node_id="m[2]").exists()  # the next
    return len(claim.captured_queries), len(complete.captured_queries)


def test_a_map_items_life_cycle_costs_the_same_queries_at_any_map_size() -> None:
    """Claiming and completing an item (which starts the next) touches that item and the
    next, whatever the number of items: a flat cost per item."""
    small, large = _map_item_queries(5), _map_item_queries(500)
    assert small == large, f"map item: {small} queries at 5 items, {large} at 500"
    claim, complete = large
    assert claim <= claim_queries(), large
    assert complete <= MAP_ITEM_COMPLETE_QUERIES, large


def test_a_worker_s_result_names_its_attempt_from_its_claim(django_assert_max_num_queries) -> None:
    """The runtime passes its claim: the result reads no row to learn its execution."""
    version = make_version(TWO_NODES)
    definition_for(version.pk)
    execution, _ = execution_start(version=version, input={})
    attempt = Attempt.objects.get(execution=execution, node_id="a")
    claimed = attempt_claim(attempt_id=attempt.pk, worker_id="w")
    assert claimed is not None
    with django_assert_max_num_queries(COMPLETE_QUERIES - 1):
        assert attempt_complete(attempt_id=attempt.pk, worker_id="w", output=1, claimed=claimed)
    assert Attempt.objects.filter(execution=execution, node_id="b").exists()
