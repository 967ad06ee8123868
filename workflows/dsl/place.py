"""Where a node body sits in a definition: a graph node, a `compensation`, or a map's
per-item `node`. The kinds (workflows/kinds/) parse their fields at a Place; the body
parser (bodies.py), which asks the kinds, makes them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from workflows.dsl.checks import Collector, Scope
from workflows.dsl.model import NodeBody, RetryPolicy

#: Parses a body nested in another (bodies.build_body).
BodyBuilder = Callable[[Collector, object, "Place"], NodeBody | None]


@dataclass(frozen=True)
class Place:
    """Where a body sits, which decides the fields it may have and what it inherits."""

    scope: Scope
    #: Prefix of the body's fields in problems: "", "compensation." or "node.".
    prefix: str
    #: How problems name this kind of body when it is not a graph node.
    label: str | None
    #: The policy the body's own `retry_policy` is merged over.
    base_policy: RetryPolicy
    #: How a body nested in this one is parsed (a map's `node`): the body parser's own,
    #: handed down, so that no kind imports the parser that asks it.
    build: BodyBuilder
    #: Why a map is not allowed here; None: it is.
    no_map: str | None = None
