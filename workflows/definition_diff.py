"""What differs between two definitions, as a reviewer reads it: nodes added, removed and
changed (with the fields that changed), the definition's own fields, the node order.

Pure: raw JSON definitions in (as stored, as read from a file), no Django."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


def canonical(definition: Any) -> str:
    """The definition as canonical JSON (sorted keys, no spaces): two definitions are the
    same exactly when these are equal, whatever their key order or spacing."""
    return json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Changes:
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    #: Each changed node's id with the dotted paths of its fields that differ.
    changed: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: The dotted paths of the definition's own fields (other than `nodes`) that differ.
    fields: tuple[str, ...] = ()
    #: The same nodes, in another order (the order decides which ready node goes first).
    reordered: bool = False

    def __str__(self) -> str:
        parts = []
        if self.added:
            parts.append(f"nodes added: {', '.join(self.added)}")
        if self.removed:
            parts.append(f"nodes removed: {', '.join(self.removed)}")
        if self.changed:
            shown = (f"{node} ({', '.join(fields)})" for node, fields in self.changed)
            parts.append(f"nodes changed: {', '.join(shown)}")
        if self.fields:
            parts.append(f"definition fields changed: {', '.join(self.fields)}")
        if self.reordered:
            parts.append("nodes reordered")
        return "; ".join(parts) or "no structural change"


def definition_changes(old: Any, new: Any) -> Changes:
    """How `new` differs from `old` (both valid definitions)."""
    before, after = _nodes(old), _nodes(new)
    kept = [node_id for node_id in after if node_id in before]
    changed = tuple(
        (node_id, fields)
        for node_id in kept
        if (fields := tuple(differing(before[node_id], after[node_id])))
    )
    top_old, top_new = _without_nodes(old), _without_nodes(new)
    return Changes(
        added=tuple(node_id for node_id in after if node_id not in before),
        removed=tuple(node_id for node_id in before if node_id not in after),
        changed=changed,
        fields=tuple(differing(top_old, top_new)),
        reordered=[n for n in before if n in after] != kept,
    )


def differing(old: Any, new: Any, prefix: str = "") -> list[str]:
    """The dotted paths at which two JSON values differ, down through objects (a list that
    differs is one path)."""
    if not _both_mappings(old, new):
        return [] if _same(old, new) else [prefix or "(value)"]
    paths = []
    for key in sorted({*old, *new}):
        path = f"{prefix}.{key}" if prefix else str(key)
        if key not in old or key not in new:
            paths.append(path)
        else:
            paths.extend(differing(old[key], new[key], path))
    return paths


def _same(old: Any, new: Any) -> bool:
    # 1 and 1.0, true and 1 are equal in Python and not the same JSON.
    return canonical(old) == canonical(new)


def _both_mappings(old: Any, new: Any) -> bool:
    return isinstance(old, Mapping) and isinstance(new, Mapping)


def _without_nodes(definition: Any) -> dict[str, Any]:
    items = definition.items() if isinstance(definition, Mapping) else ()
    return {key: value for key, value in items if key != "nodes"}


def _nodes(definition: Any) -> dict[str, Mapping[str, Any]]:
    nodes = definition.get("nodes") if isinstance(definition, Mapping) else None
    return {
        str(node["id"]): node for node in nodes or () if isinstance(node, Mapping) and "id" in node
    }
