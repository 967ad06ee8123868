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
    """Boxes and edges in pixels; each layer is centred vertically on the tallest one."""
    columns = ordered(graph, layers(graph))
    tallest = max((len(c) for c in columns), default=0)
    height = 2 * MARGIN + tallest * BOX_HEIGHT + max(tallest - 1, 0) * GAP_Y
    boxes: dict[str, Box] = {}
    for index, column in enumerate(columns):
        used = len(column) * BOX_HEIGHT + (len(column) - 1) * GAP_Y
        top = (height - used) // 2
        for position, node in enumerate(column):
            x = MARGIN + index * (BOX_WIDTH + GAP_X)
            y = top + position * (BOX_HEIGHT + GAP_Y)
            boxes[node] = Box(node, index, position, x, y)
    edges = tuple(
        _edge(boxes[parent], boxes[node])
        for node, deps in graph
        for parent in dict.fromkeys(deps)  # a repeated dependency is one edge
    )
    width = 2 * MARGIN + len(columns) * BOX_WIDTH + max(len(columns) - 1, 0) * GAP_X
    return Layout(tuple(boxes[node] for node, _ in graph), edges, width, height)


def _edge(source: Box, target: Box) -> Edge:
    x1, y1 = source.x + source.width, source.middle_y
    x2, y2 = target.x, target.middle_y
    bend = (x2 - x1) / 2
    path = f"M{x1},{y1} C{x1 + bend:g},{y1} {x2 - bend:g},{y2} {x2},{y2}"
    return Edge(source.node_id, target.node_id, path)
