"""The DAG picture's layout: layers by longest path, rows by the parents' barycenter."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from executions.console.layout import BOX_HEIGHT, BOX_WIDTH, layers, layout, ordered

DIAMOND = [("a", []), ("b", ["a"]), ("c", ["a"]), ("d", ["b", "c"])]


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ([("only", [])], {"only": 0}),
        (DIAMOND, {"a": 0, "b": 1, "c": 1, "d": 2}),
        # A shortcut edge does not pull a node left: its deepest parent decides.
        ([("a", []), ("b", ["a"]), ("c", ["a", "b"])], {"a": 0, "b": 1, "c": 2}),
        ([("x", []), ("y", [])], {"x": 0, "y": 0}),
        # Declared after its child: order in the definition does not matter.
        ([("late", ["early"]), ("early", [])], {"late": 1, "early": 0}),
    ],
)
def test_layers_are_longest_paths(graph, expected) -> None:
    assert layers(graph) == expected


def test_a_cycle_is_refused() -> None:
    with pytest.raises(ValueError, match="cycle"):
        layers([("a", ["b"]), ("b", ["a"])])


def test_a_long_chain_needs_no_recursion() -> None:
    chain: list[tuple[str, list[str]]] = [("n0", [])] + [
        (f"n{i}", [f"n{i - 1}"]) for i in range(1, 5000)
    ]
    assert layers(chain)["n4999"] == 4999


def test_children_follow_their_parents_rows() -> None:
    # Two independent chains declared crosswise: each child sits level with its parent.
    graph = [("top", []), ("bottom", []), ("after_bottom", ["bottom"]), ("after_top", ["top"])]
    assert ordered(graph, layers(graph)) == [["top", "bottom"], ["after_top", "after_bottom"]]


def test_layout_places_one_box_per_node_without_overlap_and_edges_pointing_right() -> None:
    picture = layout(DIAMOND)
    assert [b.node_id for b in picture.boxes] == ["a", "b", "c", "d"]
    spots = {(b.x, b.y) for b in picture.boxes}
    assert len(spots) == 4
    boxes = {b.node_id: b for b in picture.boxes}
    assert boxes["b"].x == boxes["c"].x > boxes["a"].x
    # The single nodes are centred on the two-node layer.
    assert boxes["a"].middle_y == boxes["d"].middle_y == picture.height // 2
    assert [(e.source, e.target) for e in picture.edges] == [
        ("a", "b"),
        ("a", "c"),
        ("b", "d"),
        ("c", "d"),
    ]
    first = picture.edges[0].path
    assert first.startswith(f"M{boxes['a'].x + BOX_WIDTH},{boxes['a'].middle_y} C")
    assert first.endswith(f"{boxes['b'].x},{boxes['b'].middle_y}")
    assert picture.width >= boxes["d"].x + BOX_WIDTH
    assert picture.height >= max(b.y for b in picture.boxes) + BOX_HEIGHT


def test_an_empty_graph_is_an_empty_picture() -> None:
    picture = layout([])
    assert picture.boxes == ()
    assert picture.edges == ()


@st.composite
def dags(draw):
    size = draw(st.integers(1, 25))
    names = [f"n{i}" for i in range(size)]
    return [
        (name, draw(st.lists(st.sampled_from(names[:i]), max_size=3)) if i else [])
        for i, name in enumerate(names)
    ]


@given(dags())
def test_every_edge_points_right_and_boxes_never_overlap(graph) -> None:
    picture = layout(graph)
    boxes = {b.node_id: b for b in picture.boxes}
    for node, deps in graph:
        for parent in deps:
            assert boxes[parent].layer < boxes[node].layer
    by_layer: dict[int, list] = {}
    for box in picture.boxes:
        by_layer.setdefault(box.layer, []).append(box)
    for column in by_layer.values():
        ys = sorted(b.y for b in column)
        assert all(b - a >= BOX_HEIGHT for a, b in pairwise(ys))
        assert all(b.y >= 0 for b in column)
        assert all(b.y + BOX_HEIGHT <= picture.height for b in column)
    assert len(picture.edges) == sum(len(set(deps)) for _, deps in graph)


def test_an_edge_that_skips_layers_passes_between_the_boxes_it_crosses() -> None:
    # work -> report skips the layer of `second`: it runs through a placeholder there.
    graph = [("sign", []), ("second", ["sign"]), ("work", []), ("report", ["work", "second"])]
    picture = layout(graph)
    boxes = {b.node_id: b for b in picture.boxes}
    long_edge = next(e for e in picture.edges if e.source == "work")
    assert " H" in long_edge.path  # straight across the middle layer
    level = int(long_edge.path.split(" H")[0].rsplit(",", 1)[1])
    second = boxes["second"]
    assert not second.y <= level <= second.y + BOX_HEIGHT
    assert [b.node_id for b in picture.boxes] == ["sign", "second", "work", "report"]
