"""A layered (Sugiyama-style) layout of a DAG, left to right, for a server-rendered SVG.

Pure: takes node ids with their parents in declared order, returns boxes and edge paths
in pixels. Layers are longest paths from a root (a node sits one layer right of its
deepest parent), so every edge points right. Within a layer nodes are ordered by the mean
position of their parents (one barycenter sweep, ties kept in declared order), which
uncrosses the usual fan-out/fan-in shapes without an optimisation search.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

BOX_WIDTH = 168
BOX_HEIGHT = 46
GAP_X = 56
GAP_Y = 18
MARGIN = 12


@dataclass(frozen=True)
class Box:
    node_id: str
    layer: int
    #: Position within the layer, 0 at the top.
    row: int
    x: int
    y: int
    width: int = BOX_WIDTH
    height: int = BOX_HEIGHT

    @property
    def middle_y(self) -> int:
        return self.y + self.height // 2


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    #: SVG path data: a cubic curve from the source's right side to the target's left.
    path: str


@dataclass(frozen=True)
class Layout:
    boxes: tuple[Box, ...]
    edges: tuple[Edge, ...]
    width: int
    height: int


def layers(graph: Sequence[tuple[str, Sequence[str]]]) -> dict[str, int]:
    """Each node's layer: 0 for a root, else one more than its deepest parent.

    `graph` is (node id, parent ids) in declared order; parents must be nodes of the graph
    and the graph acyclic (the definition's validation guarantees both). Iterative
    (Kahn's order), so a long chain does not hit the recursion limit.
    """
    parents = {node: tuple(deps) for node, deps in graph}
    waiting = {node: len(set(deps)) for node, deps in parents.items()}
    children: dict[str, list[str]] = {node: [] for node in parents}
    for node, deps in parents.items():
        for parent in set(deps):
            children[parent].append(node)
    layer = {node: 0 for node in parents}
    ready = [node for node, _ in graph if waiting[node] == 0]
    seen = 0
    while ready:
        node = ready.pop()
        seen += 1
        for child in children[node]:
            layer[child] = max(layer[child], layer[node] + 1)
            waiting[child] -= 1
            if waiting[child] == 0:
                ready.append(child)
    if seen != len(parents):
        raise ValueError("the graph has a cycle")
    return layer


def ordered(
    graph: Sequence[tuple[str, Sequence[str]]], layer: Mapping[str, int]
) -> list[list[str]]:
    """The nodes of each layer, top to bottom (barycenter of the parents' rows)."""
    declared = {node: index for index, (node, _) in enumerate(graph)}
    parents = dict(graph)
    columns: list[list[str]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for node, _ in graph:
        columns[layer[node]].append(node)
    row: dict[str, float] = {}
    for column in columns:

        def key(node: str) -> tuple[float, int]:
            deps = parents[node]
            centre = sum(row[p] for p in deps) / len(deps) if deps else declared[node]
            return (centre, declared[node])

        column.sort(key=key)
        # Parents' rows centred on the column, so a narrow layer's children do not all
        # sort above a wide layer's.
        offset = (len(column) - 1) / 2
        for index, node in enumerate(column):
            row[node] = index - offset
    return columns


def layout(graph: Sequence[tuple[str, Sequence[str]]]) -> Layout:
    """Boxes and edges in pixels; each layer is centred vertically on the tallest one.

    An edge that skips layers runs through a thin placeholder in each layer it crosses
    (ordered like a node), so it passes between boxes instead of behind them.
    """
    layer = layers(graph)
    extended, routes = _with_placeholders(graph, layer)
    for (parent, child), hops in routes.items():
        for hop, where in zip(hops, range(layer[parent] + 1, layer[child]), strict=True):
            layer[hop] = where
    columns = ordered(extended, layer)
    height_of = {node: _height(node) for node, _ in extended}
    used = [sum(height_of[n] for n in c) + max(len(c) - 1, 0) * GAP_Y for c in columns]
    height = 2 * MARGIN + max(used, default=0)
    boxes: dict[str, Box] = {}
    for index, column in enumerate(columns):
        y = (height - used[index]) // 2
        for position, node in enumerate(column):
            x = MARGIN + index * (BOX_WIDTH + GAP_X)
            boxes[node] = Box(node, index, position, x, y, height=height_of[node])
            y += height_of[node] + GAP_Y
    edges = tuple(
        _edge(
            parent,
            node,
            [boxes[parent], *(boxes[h] for h in routes.get((parent, node), ())), boxes[node]],
        )
        for node, deps in graph
        for parent in dict.fromkeys(deps)  # a repeated dependency is one edge
    )
    width = 2 * MARGIN + len(columns) * BOX_WIDTH + max(len(columns) - 1, 0) * GAP_X
    return Layout(tuple(boxes[node] for node, _ in graph), edges, width, height)


#: Placeholders are named with a character no node id has.
_HOP = "\x00"
HOP_HEIGHT = 6


def _height(node: str) -> int:
    return HOP_HEIGHT if node.startswith(_HOP) else BOX_HEIGHT


def _with_placeholders(
    graph: Sequence[tuple[str, Sequence[str]]], layer: Mapping[str, int]
) -> tuple[list[tuple[str, list[str]]], dict[tuple[str, str], list[str]]]:
    """The graph with a chain of placeholders along each edge longer than one layer, and
    each such edge's placeholders in order."""
    extended: list[tuple[str, list[str]]] = []
    routes: dict[tuple[str, str], list[str]] = {}
    for node, deps in graph:
        parents = []
        for parent in dict.fromkeys(deps):
            span = layer[node] - layer[parent]
            if span <= 1:
                parents.append(parent)
                continue
            hops = [f"{_HOP}{parent}>{node}>{i}" for i in range(1, span)]
            routes[(parent, node)] = hops
            previous = parent
            for hop in hops:
                extended.append((hop, [previous]))
                previous = hop
            parents.append(previous)
        extended.append((node, parents))
    return extended, routes


def _edge(source: str, target: str, through: list[Box]) -> Edge:
    """A curve from each box's right side to the next one's left; straight across a
    placeholder."""
    parts: list[str] = []
    for here, there in pairwise(through):
        x1, y1 = here.x + here.width, here.middle_y
        x2, y2 = there.x, there.middle_y
        bend = (x2 - x1) / 2
        if not parts:
            parts.append(f"M{x1},{y1}")
        parts.append(f"C{x1 + bend:g},{y1} {x2 - bend:g},{y2} {x2},{y2}")
        if there is not through[-1]:
            parts.append(f"H{there.x + there.width}")
    return Edge(source, target, " ".join(parts))
