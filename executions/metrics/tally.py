"""What one unit of work changes in the metrics, staged in the same transaction as its events.

The UnitOfWork (executions/kernel/unit.py) notes the statuses its events are about to
change and, at commit, inserts one MetricDelta row: status moves, counts of events by kind,
and the attempts that finished (their durations are read at scrape time from the Attempt
rows). The insert never contends with another transaction (no counter row is updated
here); a scrape folds the pending deltas into the totals and deletes them
(executions/metrics/ledger.py). So a count can neither be lost nor counted twice: it commits or
rolls back with the events it counts.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from executions.engine.events import Decision, EventType
from executions.engine.state import ExecutionState
from executions.kernel.unit import touched_nodes, watch
from executions.kernel.writes import Writes
from executions.metrics.models import MetricDelta
from executions.sqlnames import sql
from workflows.dsl.model import COMPENSATION_SUFFIX, Definition

#: Counters by the event that counts them, labelled by workflow (Prometheus adds _total).
WORKFLOW_COUNTERS = {
    EventType.WORKFLOW_STARTED: "workflows_started",
    EventType.WORKFLOW_COMPLETED: "workflows_completed",
    EventType.WORKFLOW_FAILED: "workflows_failed",
    EventType.WORKFLOW_CANCELLED: "workflows_cancelled",
}

#: An attempt's result, as its Attempt row's status names it (task_attempts_finished_total).
RESULTS = {
    EventType.TASK_COMPLETED: "succeeded",
    EventType.TASK_FAILED: "failed",
    EventType.TASK_TIMED_OUT: "timed_out",
    EventType.TASK_CANCELLED: "cancelled",
}

#: A delta entry's scope: which labels the ledger adds when it folds it.
GLOBAL, WORKFLOW = None, ""


def register() -> None:
    """Every unit of work stages its deltas with its events from now on (the kernel knows
    no metrics: it calls the watchers registered with it). ExecutionsConfig.ready calls
    this in every process."""
    watch(Tally)


def born_pending(node_id: str) -> bool:
    """Whether the node's Task row exists from the start (projections.create_tasks makes
    one per definition node); a map item's or a compensation's appears when first touched."""
    return "[" not in node_id and not node_id.endswith(COMPENSATION_SUFFIX)


class Tally:
    """The metrics side of one UnitOfWork (a Watcher): statuses before it, deltas at
    its commit."""

    def __init__(self, state: ExecutionState) -> None:
        #: No event yet: the execution's rows are new to the metrics, counted at the first
        #: commit (in the start's transaction, or when a start_at timer fires).
        self.first = not state.last_seq
        self.execution_before: str | None = None if self.first else str(state.status)
        self.nodes_before: dict[str, str | None] = {}

    def note(self, decisions: Iterable[Decision], state: ExecutionState) -> None:
        """Before `decisions` are folded: remember the status of every node they touch."""
        for node_id in touched_nodes(decisions):
            if node_id not in self.nodes_before:
                node = state.nodes.get(node_id)
                self.nodes_before[node_id] = (
                    str(node.status) if node is not None else _initial(node_id)
                )

    def stage(
        self,
        execution: Any,
        state: ExecutionState,
        appended: Sequence[Decision],
        now: datetime,
        definition: Definition | None,
        writes: Writes | None = None,
    ) -> None:
        """Insert the unit's deltas (inside its transaction; staged in `writes` when
        given), and start afresh.

        `definition`: the one decide read. An execution's first unit that decided with it
        started normally, so the Task rows of its nodes were created with it, pending (a
        start that failed before creating them ends through an engine error, without it)."""
        data = deltas(self, state, appended, now)
        if self.first and definition is not None:
            created = ["workflow_tasks", GLOBAL, {"status": "pending"}, len(definition.nodes)]
            data["n"].append(created)
        self.first, self.execution_before = False, str(state.status)
        self.nodes_before = {}
        if data["n"] or data["a"]:
            data.update(w=execution.workflow_id, v=execution.version_id, e=str(execution.pk))
            if writes is not None:
                writes.add(_INSERT_DELTA, [json.dumps(data)])
            else:
                MetricDelta.objects.create(data=data)


_INSERT_DELTA = sql("INSERT INTO {d} ({d.data}) VALUES (%s::jsonb)", d=MetricDelta)


def _initial(node_id: str) -> str | None:
    return "pending" if born_pending(node_id) else None


def deltas(
    tally: Tally, state: ExecutionState, appended: Sequence[Decision], now: datetime
) -> dict[str, Any]:
    """{"n": [[name, scope, labels, delta], ...], "a": [[node_id, attempt, result, at], ...]}.

    scope: GLOBAL (labels as given), WORKFLOW (the ledger adds the workflow's name), or a
    node id (it adds the workflow and the node's type). Pure: no query, no clock.
    """
    moves: Counter[tuple[str, str | None, str]] = Counter()
    _status_moves(moves, "workflow_executions", GLOBAL, tally.execution_before, state.status)
    for node_id, before in tally.nodes_before.items():
        node = state.nodes.get(node_id)
        _status_moves(moves, "workflow_tasks", GLOBAL, before, node.status if node else before)
    finished: list[list[Any]] = []
    if appended:
        moves[("workflow_events", GLOBAL, "")] += len(appended)
    for decision in appended:
        _count(moves, finished, decision, state, now)
    entries = [
        [name, scope, {"status": label} if label else {}, delta]
        for (name, scope, label), delta in moves.items()
        if delta
    ]
    return {"n": entries, "a": finished}


def _status_moves(
    moves: Counter[tuple[str, str | None, str]],
    name: str,
    scope: str | None,
    before: str | None,
    after: str | None,
) -> None:
    if before == after:
        return
    if before is not None:
        moves[(name, scope, str(before))] -= 1
    if after is not None:
        moves[(name, scope, str(after))] += 1


def _count(
    moves: Counter[tuple[str, str | None, str]],
    finished: list[list[Any]],
    decision: Decision,
    state: ExecutionState,
    now: datetime,
) -> None:
    kind, node_id = decision.type, decision.node_id
    if kind in WORKFLOW_COUNTERS:
        moves[(WORKFLOW_COUNTERS[kind], WORKFLOW, "")] += 1
    elif node_id is None:
        return
    elif kind == EventType.TASK_STARTED:
        moves[("tasks_running", node_id, "")] += 1
    elif kind == EventType.TASK_RETRY_SCHEDULED:
        moves[("task_retry", node_id, "")] += 1
    elif kind in RESULTS:
        node = state.nodes.get(node_id)
        attempt = decision.attempt or (node.attempt if node else 0)
        # Only an attempt that started was running (a cancel may end one still queued).
        if node is not None and attempt in node.started_attempts:
            moves[("tasks_running", node_id, "")] -= 1
            finished.append([node_id, attempt, RESULTS[kind], now.isoformat()])
