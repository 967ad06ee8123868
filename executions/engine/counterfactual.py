"""Counterfactual replay: what a recorded execution would have done under another version.

The recorded log is folded as it happened, but every run of orchestrator decisions is
compared with what `decide` returns for the *other* definition (and, optionally, another
input). The first decision that differs is where the histories part: everything before
it would have happened the same way, so the outputs of the nodes that had succeeded by
then (and that the new version leaves unchanged, with everything upstream of them) can
be reused by a new execution of the new version; every other node would run.

Pure: the same (definitions, events, execution id, input) always give the same report,
including retry delays, whose jitter is a hash of (execution id, node, attempt).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from executions.engine.decide import decide
from executions.engine.events import Decision, Event, EventType, Source
from executions.engine.fold import fold
from executions.engine.state import ExecutionState, NodeState
from executions.engine.statuses import TaskStatus
from executions.engine.verify import verify_log
from workflows.dsl import Definition, Node

#: The node fields that decide what a succeeded node output: a node that differs only in
#: its retry policy, timeouts or compensation would have produced the same output.
_OUTPUT_FIELDS = ("type", "input", "spec", "depends_on", "when", "trigger_rule")

_MISSING = object()


@dataclass(frozen=True)
class Report:
    #: The seq of the first recorded decision the new version would not take (or, when the
    #: new version would take one more, the seq it would get); None: no divergence.
    diverges_at: int | None
    reason: str | None
    #: At the divergence, each decision the new version would take next to what the log
    #: recorded in its place: [{"seq", "would_decide", "recorded", "same"}].
    decisions: list[dict[str, Any]]
    #: Nodes whose recorded outputs a new execution of the new version can reuse.
    reused: list[str]
    #: The new version's nodes that would be decided afresh (run, or skipped).
    would_run: list[str]
    #: Each reused node's recorded output, as it was before the divergence (what a new
    #: execution of the new version records as that node's result).
    outputs: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "diverges_at": self.diverges_at,
            "reason": self.reason,
            "decisions": self.decisions,
            "reused": self.reused,
            "would_run": self.would_run,
        }


def counterfactual(
    recorded: Definition,
    candidate: Definition,
    events: Sequence[Event],
    *,
    execution_id: str,
    input: Any = _MISSING,
) -> Report:
    """Replay `events` (recorded under `recorded`) deciding with `candidate`.

    `input`: run the history as if the execution had been started with this input instead
    (its workflow_started is rewritten; the decisions that read the input part from there).
    """
    if input is not _MISSING:
        events = with_input(events, input)
    # `state`: the log folded up to the divergence (all of it when there is none): what
    # had happened by then happens alike under the new version, so it can be reused.
    divergence, state = verify_log(candidate, events, execution_id=execution_id)
    if divergence is None:
        return _report(None, None, [], recorded, candidate, state)
    start = _run_start(events, divergence.seq, recorded_event=divergence.recorded is not None)
    before = fold(events[:start], execution_id=execution_id)
    run = []
    for event in events[start:]:
        if event.source != Source.ENGINE:
            break
        run.append(event)
    decisions = _pairs(decide(candidate, before), run, start + 1)
    reason = _reason(divergence.expected, divergence.recorded, divergence.seq)
    return _report(divergence.seq, reason, decisions, recorded, candidate, state)


def _report(
    seq: int | None,
    reason: str | None,
    decisions: list[dict[str, Any]],
    recorded: Definition,
    candidate: Definition,
    state: ExecutionState,
) -> Report:
    reused = _reusable(recorded, candidate, state.nodes)
    rest = [node.id for node in candidate.nodes if node.id not in reused]
    outputs = {node_id: state.nodes[node_id].output for node_id in reused}
    return Report(seq, reason, decisions, reused, rest, outputs)


def with_input(events: Sequence[Event], input: Any) -> list[Event]:
    """The log with its workflow_started carrying `input` instead of the recorded one."""
    return [
        replace(e, data={**e.data, "input": input}, payload=None)
        if e.type == EventType.WORKFLOW_STARTED
        else e
        for e in events
    ]


def _run_start(events: Sequence[Event], seq: int, *, recorded_event: bool) -> int:
    """The index of the first decision of the run of decisions the divergence at `seq` is
    in (or follows: the new version would decide more than the run recorded); when the
    divergence follows a fact, the index after it."""
    index = seq - 1
    if not recorded_event and (index == 0 or events[index - 1].source != Source.ENGINE):
        return index
    if not recorded_event:
        index -= 1
    while index > 0 and events[index - 1].source == Source.ENGINE:
        index -= 1
    return index


def _pairs(would: list[Decision], run: list[Event], first_seq: int) -> list[dict[str, Any]]:
    pairs = []
    for index in range(max(len(would), len(run))):
        new = would[index] if index < len(would) else None
        old = run[index] if index < len(run) else None
        pairs.append(
            {
                "seq": old.seq if old is not None else first_seq + index,
                "would_decide": _shown(new),
                "recorded": _shown(old),
                "same": new is not None and old is not None and _shown(new) == _shown(old),
            }
        )
    return pairs


def _shown(item: Decision | Event | None) -> dict[str, Any] | None:
    if item is None:
        return None
    return {
        "type": str(item.type),
        "node_id": item.node_id,
        "attempt": item.attempt,
        "data": item.data,
    }


def _reason(would: Decision | None, old: Event | None, seq: int) -> str:
    def what(item: Decision | Event) -> str:
        where = f" node '{item.node_id}'" if item.node_id else ""
        attempt = f" attempt {item.attempt}" if item.attempt else ""
        return f"{item.type}{where}{attempt}"

    if would is None:
        shown = what(old) if old is not None else "nothing"
        return f"at seq {seq} the log records {shown}; the new version would not decide it"
    if old is None:
        return f"at seq {seq} the new version would decide {what(would)}; the log records nothing"
    if (would.type, would.node_id, would.attempt) == (old.type, old.node_id, old.attempt):
        changed = sorted(
            key for key in {*would.data, *old.data} if would.data.get(key) != old.data.get(key)
        )
        return (
            f"at seq {seq} the new version would decide {what(would)} with a different "
            f"{', '.join(changed)} ({_values(would.data, changed)} instead of "
            f"{_values(old.data, changed)})"
        )
    return f"at seq {seq} the new version would decide {what(would)}; the log records {what(old)}"


def _values(data: dict[str, Any], keys: list[str]) -> str:
    return ", ".join(f"{key}={data.get(key)!r}" for key in keys)


def _reusable(
    recorded: Definition, candidate: Definition, nodes: Mapping[str, NodeState]
) -> list[str]:
    """Nodes that succeeded before the divergence, are the same in both versions as far as
    their output goes, and whose every upstream node is reusable too (so the inputs they
    were run with are the ones the new version would give them). In declared order."""

    def alike(node: Node) -> str | None:
        """The node's status before the divergence, if it is the same in both versions."""
        old = recorded.by_id.get(node.id)
        state = nodes.get(node.id)
        return state.status if old is not None and state and _same_output(old, node) else None

    statuses = {node.id: alike(node) for node in candidate.nodes}
    # A node skipped alike before the divergence is skipped again the same way: decided
    # again (not reused), it changes nothing downstream. Any other node that is not reused
    # taints everything downstream of it, whose inputs may then differ: one sweep.
    unfit = [key for key, status in statuses.items() if status not in _KEEPS_DOWNSTREAM]
    tainted: set[str] = set()
    stack = list(unfit)
    while stack:
        current = stack.pop()
        if current not in tainted:
            tainted.add(current)
            stack.extend(candidate.children[current])
    return [
        key
        for key, status in statuses.items()
        if status == TaskStatus.SUCCEEDED and key not in tainted
    ]


_KEEPS_DOWNSTREAM = frozenset({TaskStatus.SUCCEEDED, TaskStatus.SKIPPED})


def _same_output(old: Node, new: Node) -> bool:
    return all(getattr(old, name) == getattr(new, name) for name in _OUTPUT_FIELDS)
