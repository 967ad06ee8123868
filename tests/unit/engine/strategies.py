"""Hypothesis strategies: random DAGs and random failure plans."""

from __future__ import annotations

from hypothesis import strategies as st

from workflows.dsl import TRIGGER_RULES, Definition, Node, NodeBody, RetryPolicy
from workflows.kinds.approval import ApprovalSpec
from workflows.kinds.delay import DelaySpec
from workflows.kinds.function import FunctionSpec
from workflows.kinds.map import MapSpec

ITEM_BODY = NodeBody(
    type="function",
    spec=FunctionSpec("std.echo"),
    input={"i": "{{ index }}"},
    retry_policy=RetryPolicy(max_attempts=2),
)
UNDO = NodeBody(type="function", spec=FunctionSpec("std.echo"), input={"undo": "yes"})
SPECS = {
    "function": lambda draw: FunctionSpec("std.echo"),
    "delay": lambda draw: DelaySpec(seconds=1.0),
    "approval": lambda draw: ApprovalSpec(),
    "map": lambda draw: MapSpec("input.items", ITEM_BODY, draw(st.integers(1, 3))),
}
OUTCOMES = st.sampled_from(["ok", "ok", "ok", "fail", "fatal"])


@st.composite
def dags(draw: st.DrawFn, max_nodes: int = 10) -> tuple[Definition, dict[str, list[str]]]:
    count = draw(st.integers(min_value=1, max_value=max_nodes))
    nodes = []
    plan: dict[str, list[str]] = {}
    for index in range(count):
        node_id = f"n{index}"
        parents = draw(
            st.sets(st.sampled_from([f"n{i}" for i in range(index)]), max_size=3)
            if index
            else st.just(set())
        )
        kind = draw(
            st.sampled_from(["function", "function", "function", "delay", "approval", "map"])
        )
        when = draw(st.sampled_from([None, None, "input.flag", "`true`"]))
        nodes.append(
            Node(
                id=node_id,
                type=kind,
                spec=SPECS[kind](draw),
                compensation=UNDO if kind == "function" and draw(st.booleans()) else None,
                depends_on=tuple(sorted(parents)),
                trigger_rule=draw(st.sampled_from(TRIGGER_RULES)),
                when=when,
                input={"parents": [f"{{{{ nodes.{p}.output }}}}" for p in sorted(parents)]},
                retry_policy=RetryPolicy(
                    max_attempts=draw(st.integers(1, 3)), initial_interval_seconds=1.0
                ),
            )
        )
        if kind == "function":
            plan[node_id] = draw(st.lists(OUTCOMES, max_size=3))
    return Definition(nodes=tuple(nodes)), plan
