"""nodes.tasks.execute runs an attempt with its kind's executor, named by dotted path in
the kind (workflows/kinds/) and imported only when a worker runs it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from nodes.context import Claimed, NodeContext
from nodes.errors import NodeError
from nodes.tasks import execute
from workflows.dsl import parse_definition
from workflows.kinds import WORKER_NAMES, register, unregister
from workflows.kinds.base import NodeKind

EXECUTOR_MODULE = "tests.unit.nodes.shout_executor"


class ShoutKind(NodeKind):
    name = "shout"
    runs_on_worker = True
    executor = f"{EXECUTOR_MODULE}:shout"


@pytest.fixture
def shout() -> Iterator[NodeKind]:
    kind = register(ShoutKind())
    yield kind
    unregister("shout")


def claimed(node_type: str, payload: Any) -> Claimed:
    definition = parse_definition(
        {"nodes": [{"id": "n", "type": node_type, "input": "{{ input.word }}"}]}
    )
    return Claimed(1, "exec-1", definition.by_id["n"], 1, payload, 30.0)


def context() -> NodeContext:
    return NodeContext(execution_id="exec-1", node_id="n", attempt=1)


def test_a_registered_worker_kind_runs_its_executor_imported_on_use(shout: NodeKind) -> None:
    sys.modules.pop(EXECUTOR_MODULE, None)
    assert "shout" in WORKER_NAMES
    assert execute(claimed("shout", "hello"), context()) == "HELLO"
    assert EXECUTOR_MODULE in sys.modules


def test_a_kind_without_an_executor_does_not_run_on_a_worker() -> None:
    with pytest.raises(NodeError, match="does not run on a worker") as raised:
        execute(claimed("approval", None), context())
    assert raised.value.type == "BadNodeType"
    assert raised.value.retryable is False
