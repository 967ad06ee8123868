"""Graph algorithms over `depends_on`: cycles and upstream sets. Iterative throughout, so
that no graph shape can exhaust the interpreter's stack."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence


def _children(parents: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    kids: dict[str, list[str]] = {node: [] for node in parents}
    for node, deps in parents.items():
        for parent in deps:
            kids[parent].append(node)
    return kids


def _components(parents: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Strongly connected components (Kosaraju), each in declaration order."""
    kids = _children(parents)
    finished: list[str] = []
    seen: set[str] = set()
    for start in parents:
        if start in seen:
            continue
        seen.add(start)
        stack = [(start, iter(kids[start]))]
        while stack:
            node, pending = stack[-1]
            step = next((k for k in pending if k not in seen), None)
            if step is None:
                stack.pop()
                finished.append(node)
            else:
                seen.add(step)
                stack.append((step, iter(kids[step])))
    order = {node: i for i, node in enumerate(parents)}
    assigned: set[str] = set()
    components: list[list[str]] = []
    for root in reversed(finished):
        if root in assigned:
            continue
        assigned.add(root)
        component, todo = [], [root]
        while todo:
            node = todo.pop()
            component.append(node)
            for parent in parents[node]:
                if parent not in assigned:
                    assigned.add(parent)
                    todo.append(parent)
        components.append(sorted(component, key=order.__getitem__))
    return components


def _shortest_cycle(start: str, kids: Mapping[str, Sequence[str]], within: set[str]) -> list[str]:
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for kid in kids[node]:
            if kid not in within:
                continue
            if kid == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if kid not in came_from:
                came_from[kid] = node
                queue.append(kid)
    return [start, start]  # unreachable for a component of two or more nodes


def find_cycles(parents: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """One cycle per strongly connected component, in execution order.

    `parents` maps every node to the nodes it depends on (all of them keys, self-loops
    excluded). A cycle starts and ends at the component's first declared node:
    ["a", "b", "a"] means b depends on a and a depends on b.
    """
    kids = _children(parents)
    cycles = []
    for component in _components(parents):
        if len(component) > 1:
            cycles.append(_shortest_cycle(component[0], kids, set(component)))
    order = {node: i for i, node in enumerate(parents)}
    return sorted(cycles, key=lambda cycle: order[cycle[0]])


def upstream(parents: Mapping[str, Sequence[str]], node: str) -> frozenset[str]:
    """Every node `node` transitively depends on (itself only if on a cycle)."""
    seen: set[str] = set()
    stack = list(parents.get(node, ()))
    while stack:
        current = stack.pop()
        if current not in seen:
            seen.add(current)
            stack.extend(parents.get(current, ()))
    return frozenset(seen)
