"""What sync_workflows prints as a new version's changes: canonical JSON decides whether
anything changed at all; the diff names nodes added, removed and changed (with the dotted
fields), the definition's own fields and a new node order."""

from __future__ import annotations

from typing import Any

import pytest

from workflows.definition_diff import Changes, canonical, definition_changes


def node(node_id: str, **fields: Any) -> dict[str, Any]:
    return {"id": node_id, "type": "function", "function": "std.echo", **fields}


BASE = {"nodes": [node("a"), node("b", depends_on=["a"], input={"x": 1, "y": [1]})]}


def test_key_order_and_spacing_make_the_same_canonical_json() -> None:
    shuffled = {"nodes": [dict(reversed(n.items())) for n in BASE["nodes"]]}
    assert canonical(shuffled) == canonical(BASE)
    assert canonical({"n": 1}) != canonical({"n": 1.0})
    assert canonical({"n": True}) != canonical({"n": 1})


@pytest.mark.parametrize(
    ("new", "changes", "shown"),
    [
        (
            {"nodes": [*BASE["nodes"], node("c")]},
            Changes(added=("c",)),
            "nodes added: c",
        ),
        ({"nodes": [node("a")]}, Changes(removed=("b",)), "nodes removed: b"),
        (
            {"nodes": [node("a"), node("b", depends_on=["a"], input={"x": 2, "y": [2], "z": 0})]},
            Changes(changed=(("b", ("input.x", "input.y", "input.z")),)),
            "nodes changed: b (input.x, input.y, input.z)",
        ),
        (
            {"nodes": [node("a", timeout_seconds=5), BASE["nodes"][1]], "output": "x"},
            Changes(changed=(("a", ("timeout_seconds",)),), fields=("output",)),
            "nodes changed: a (timeout_seconds); definition fields changed: output",
        ),
        (
            {"nodes": [node("a", function="std.noop"), node("b", input=1.0)]},
            Changes(changed=(("a", ("function",)), ("b", ("depends_on", "input")))),
            "nodes changed: a (function), b (depends_on, input)",
        ),
        (
            {"nodes": list(reversed(BASE["nodes"]))},
            Changes(reordered=True),
            "nodes reordered",
        ),
        (
            {**BASE, "retry_policy": {"max_attempts": 2}},
            Changes(fields=("retry_policy",)),
            "definition fields changed: retry_policy",
        ),
    ],
)
def test_the_diff_names_what_changed(new: dict[str, Any], changes: Changes, shown: str) -> None:
    found = definition_changes(BASE, new)
    assert found == changes
    assert str(found) == shown


def test_a_removed_and_an_added_node_in_one_change() -> None:
    new = {"nodes": [node("a"), node("c", depends_on=["a"])], "retry_policy": {"jitter": False}}
    old = {**BASE, "retry_policy": {"jitter": True, "max_attempts": 2}}
    assert str(definition_changes(old, new)) == (
        "nodes added: c; nodes removed: b; definition fields changed: "
        "retry_policy.jitter, retry_policy.max_attempts"
    )
