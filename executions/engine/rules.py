"""When a pending node may run: trigger rules over its parents' statuses."""

from __future__ import annotations

from enum import Enum

from executions.engine.retry import should_retry
from executions.engine.state import ExecutionState, NodeState
from executions.engine.statuses import TaskStatus
from workflows.dsl import Definition, Node


class Verdict(Enum):
    WAIT = "wait"
    RUN = "run"
    SKIP = "skip"


def failed_for_good(node: Node, state: NodeState) -> bool:
    """Failed, and the policy allows no further attempt."""
    if state.status != TaskStatus.FAILED:
        return False
    return not should_retry(node.retry_policy, attempt=state.tries, error=state.error)


def is_settled(node: Node, state: NodeState) -> bool:
    """Nothing more will happen to this node unless an operator intervenes."""
    if state.status in (TaskStatus.SUCCEEDED, TaskStatus.SKIPPED, TaskStatus.CANCELLED):
        return True
    return failed_for_good(node, state)


def trigger_verdict(definition: Definition, state: ExecutionState, node: Node) -> Verdict:
    nodes, by_id = state.nodes, definition.by_id
    statuses = []
    for parent_id in node.depends_on:
        parent_state = nodes.get(parent_id)
        if parent_state is None or not is_settled(by_id[parent_id], parent_state):
            return Verdict.WAIT  # the common case in a wide fan-in: stop at the first
        statuses.append(parent_state.status)
    if node.trigger_rule == "all_done":
        return Verdict.RUN
    if node.trigger_rule == "none_failed":
        bad = {TaskStatus.FAILED, TaskStatus.CANCELLED}
        return Verdict.SKIP if any(s in bad for s in statuses) else Verdict.RUN
    return Verdict.RUN if all(s == TaskStatus.SUCCEEDED for s in statuses) else Verdict.SKIP
