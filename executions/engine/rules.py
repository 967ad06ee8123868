"""When a pending node may run: trigger rules over its parents' outcomes.

Airflow's meanings. A settled parent's outcome is `succeeded`, `failed` (failed for
good, or cancelled: Airflow's failed/upstream_failed) or `skipped`. Most rules wait for
every parent to settle; `one_success`, `one_failed` and `one_done` run as soon as one
parent has that outcome (`one_done`: succeeded or failed). A rule that cannot hold any
more skips the node. `always` is Airflow's "no dependency at all": the node runs as soon
as the execution does, as a root would, whatever its parents are doing; its parents only
give its templates something to read (what they recorded by then, perhaps nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum

from executions.engine.errors import record_of
from executions.engine.retry import parks, should_retry
from executions.engine.state import ExecutionState, NodeState
from executions.engine.statuses import TaskStatus
from workflows.dsl import Definition, Node


class Verdict(Enum):
    WAIT = "wait"
    RUN = "run"
    SKIP = "skip"


#: Rules meant to run after a failure: strict failure still starts them. A rule that
#: holds with a failed parent (`one_done`, `all_done_min_one_success`) is one of them, and
#: so is `always`, which runs regardless.
RUNS_AFTER_FAILURE = frozenset(
    {"all_done", "one_failed", "all_failed", "one_done", "all_done_min_one_success", "always"}
)

#: Runs at once, parents settled or not.
NO_DEPENDENCY = "always"

#: (succeeded, failed, skipped) counts over settled parents -> run?
_Holds = Callable[[int, int, int], bool]
_WHEN_SETTLED: dict[str, _Holds] = {
    "all_success": lambda ok, bad, skipped: bad == 0 and skipped == 0,
    "none_failed": lambda ok, bad, skipped: bad == 0,
    "all_done": lambda ok, bad, skipped: True,
    "one_success": lambda ok, bad, skipped: ok > 0,
    "one_failed": lambda ok, bad, skipped: bad > 0,
    "none_failed_min_one_success": lambda ok, bad, skipped: bad == 0 and ok > 0,
    "all_failed": lambda ok, bad, skipped: ok == 0 and skipped == 0,
    "none_skipped": lambda ok, bad, skipped: skipped == 0,
    "one_done": lambda ok, bad, skipped: ok + bad > 0,
    "all_skipped": lambda ok, bad, skipped: ok == 0 and bad == 0,
    "all_done_min_one_success": lambda ok, bad, skipped: ok > 0,
}

#: Rules that fire on the first parent with one of these outcomes, settled siblings or not.
_EAGER = {
    "one_success": frozenset({"succeeded"}),
    "one_failed": frozenset({"failed"}),
    "one_done": frozenset({"succeeded", "failed"}),
}


def failed_for_good(node: Node, state: NodeState) -> bool:
    """Failed, and the policy allows no further attempt nor a wait for an operator (park)."""
    if state.status != TaskStatus.FAILED:
        return False
    policy, error = node.retry_policy, record_of(state.error)
    if should_retry(policy, attempt=state.tries, error=error):
        return False
    return not parks(policy, attempt=state.tries, error=error, given_up=state.given_up)


def is_settled(node: Node, state: NodeState) -> bool:
    """Nothing more will happen to this node unless an operator intervenes."""
    if state.status in (TaskStatus.SUCCEEDED, TaskStatus.SKIPPED, TaskStatus.CANCELLED):
        return True
    return failed_for_good(node, state)


def outcome(node: Node, state: NodeState | None) -> str | None:
    """`succeeded`, `failed` or `skipped` for a settled node; None while it is not."""
    if state is None:
        return None
    status = state.status
    if status == TaskStatus.SUCCEEDED or status == TaskStatus.SKIPPED:
        return status
    if status == TaskStatus.CANCELLED or failed_for_good(node, state):
        return "failed"
    return None


def trigger_verdict(definition: Definition, state: ExecutionState, node: Node) -> Verdict:
    if not node.depends_on or node.trigger_rule == NO_DEPENDENCY:
        return Verdict.RUN  # as in Airflow: a root runs whatever its rule
    nodes, by_id = state.nodes, definition.by_id
    eager = _EAGER.get(node.trigger_rule)
    waiting = False
    counts = {"succeeded": 0, "failed": 0, "skipped": 0}
    for parent_id in node.depends_on:
        got = outcome(by_id[parent_id], nodes.get(parent_id))
        if got is None:
            if eager is None:
                return Verdict.WAIT  # the common case in a wide fan-in: stop at the first
            waiting = True
            continue
        if eager is not None and got in eager:
            return Verdict.RUN
        counts[got] += 1
    if waiting:
        return Verdict.WAIT
    holds = _WHEN_SETTLED[node.trigger_rule]
    ran = holds(counts["succeeded"], counts["failed"], counts["skipped"])
    return Verdict.RUN if ran else Verdict.SKIP
