"""The executor of the test kind `shout` (test_nodes_kind_dispatch.py): imported by the
worker's dispatch only when an attempt of that kind runs."""

from __future__ import annotations

from typing import Any

from nodes.context import NodeContext
from workflows.dsl import Node


def shout(node: Node, payload: Any, ctx: NodeContext) -> Any:
    return str(payload).upper()
