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
    parents = [(definition.by_id[p], state.node(p)) for p in node.depends_on]
    if not all(is_settled(parent, parent_state) for parent, parent_state in parents):
        return Verdict.WAIT
    statuses = [parent_state.status for _, parent_state in parents]
    if node.trigger_rule == "all_done":
        return Verdict.RUN
    if node.trigger_rule == "none_failed":
        bad = {TaskStatus.FAILED, TaskStatus.CANCELLED}
        return Verdict.SKIP if any(s in bad for s in statuses) else Verdict.RUN
    return Verdict.RUN if all(s == TaskStatus.SUCCEEDED for s in statuses) else Verdict.SKIP
