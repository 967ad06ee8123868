"""Hypothesis strategies: random DAGs and random failure plans."""

from __future__ import annotations

from hypothesis import strategies as st

from workflows.dsl import Definition, Node, NodeBody, RetryPolicy

ITEM_BODY = NodeBody(
    type="function",
    function="std.echo",
    input={"i": "{{ index }}"},
    retry_policy=RetryPolicy(max_attempts=2),
)
UNDO = NodeBody(type="function", function="std.echo", input={"undo": "yes"})
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
                function="std.echo" if kind == "function" else None,
                seconds=1.0 if kind == "delay" else None,
                items="input.items" if kind == "map" else None,
                node=ITEM_BODY if kind == "map" else None,
                max_parallel=draw(st.integers(1, 3)) if kind == "map" else None,
                compensation=UNDO if kind == "function" and draw(st.booleans()) else None,
                depends_on=tuple(sorted(parents)),
                trigger_rule=draw(st.sampled_from(["all_success", "none_failed", "all_done"])),
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
