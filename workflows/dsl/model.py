from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any

from workflows.dsl.concurrency import ConcurrencySpec
from workflows.dsl.rate_limit import RateLimitSpec

#: A compensation runs as the task `<node id>.compensation` ("." never appears in an id).
COMPENSATION_SUFFIX = ".compensation"
#: Airflow's names and meanings (executions/engine/rules.py decides them).
TRIGGER_RULES = (
    "all_success",
    "none_failed",
    "all_done",
    "one_success",
    "one_failed",
    "none_failed_min_one_success",
    "all_failed",
    "none_skipped",
    "one_done",
    "all_skipped",
    "all_done_min_one_success",
    "always",
)

JSON = Any


@dataclass(frozen=True)
class RetryPolicy:
    """When and how soon a failed attempt is tried again."""

    #: Attempts in all, the first included; 1 means never retry.
    max_attempts: int = 3
    initial_interval_seconds: float = 1.0
    backoff_coefficient: float = 2.0
    max_interval_seconds: float = 300.0
    #: Deterministic jitter from hash(execution id, node id, attempt); never random.
    jitter: bool = True
    #: Error types (NodeError.type) that fail the node at once.
    non_retryable_errors: tuple[str, ...] = ()
    #: What a node that runs out of attempts does: `fail` (the execution fails) or `park`
    #: (it waits, status `parked`, for an operator's retry or fail).
    on_exhausted: str = "fail"


@dataclass(frozen=True)
class NodeBody:
    """What a node does, without its place in the graph.

    Used as-is for `compensation` and for a `map` node's per-item `node`; `Node`
    adds the graph fields. What only one type has is in `spec`, its kind's own frozen
    object (workflows/kinds/<type>.py: FunctionSpec, HttpSpec, DelaySpec, ...).
    """

    type: str
    #: Any JSON; templates are resolved when the node is scheduled.
    input: JSON = None
    #: The kind's own fields, as its kind parsed them (None: a kind without any).
    spec: Any = None
    #: The effective policy: the node's override merged over the definition's.
    retry_policy: RetryPolicy = field(default_factory=RetryPolicy)
    #: Per attempt, start to close.
    timeout_seconds: float | None = None
    #: The lease: an attempt whose worker stops renewing it for this long is timed out.
    heartbeat_timeout_seconds: float | None = None
    #: A pool's name: an attempt runs only while the pool has a free slot (its existence
    #: is checked when a definition is stored, by workflows/services.py).
    pool: str | None = None
    #: At most so many attempts a second start per key, across executions.
    rate_limit: RateLimitSpec | None = None


@dataclass(frozen=True)
class Node(NodeBody):
    """A node of the DAG."""

    id: str = ""
    depends_on: tuple[str, ...] = ()
    #: A bare JMESPath expression; falsy means the node is skipped.
    when: str | None = None
    trigger_rule: str = "all_success"
    compensation: NodeBody | None = None


@dataclass(frozen=True)
class Definition:
    """A parsed, validated workflow definition. Nodes keep their declared order."""

    nodes: tuple[Node, ...]
    retry_policy: RetryPolicy = field(default_factory=RetryPolicy)
    #: Template for the execution's output; None means the outputs of the sink nodes.
    output: JSON = None
    #: A cancel undoes succeeded nodes too (their `compensation`s, latest first) before the
    #: execution ends cancelled.
    compensate_on_cancel: bool = False
    #: At most `limit` executions per rendered `key` run at once (workflows/dsl/concurrency.py).
    concurrency: ConcurrencySpec | None = None
    #: Days its ended executions are kept before the daily purge (None: the
    #: WORKFLOW_RETENTION_DAYS setting's).
    retention_days: int | None = None
    #: Seconds an execution may run, from its start, before it ends failed
    #: (WorkflowTimeout); a child gets no more than what is left of its parent's.
    timeout_seconds: float | None = None

    @cached_property
    def by_id(self) -> Mapping[str, Node]:
        return {node.id: node for node in self.nodes}

    @cached_property
    def children(self) -> Mapping[str, tuple[str, ...]]:
        kids: dict[str, list[str]] = {node.id: [] for node in self.nodes}
        for node in self.nodes:
            for parent in node.depends_on:
                kids[parent].append(node.id)
        return {key: tuple(value) for key, value in kids.items()}

    @cached_property
    def sinks(self) -> tuple[str, ...]:
        return tuple(node_id for node_id, kids in self.children.items() if not kids)

    def node_for(self, node_id: str) -> Node:
        """A node by id, including a map's item tasks `<map id>[<index>]`.

        An item task is the map's `node` body under its own id, with no dependencies.
        """
        found = self.by_id.get(node_id)
        if found is not None:
            return found
        if node_id.endswith(COMPENSATION_SUFFIX):
            owner = self.by_id.get(node_id.removesuffix(COMPENSATION_SUFFIX))
            if owner is None or owner.compensation is None:
                raise KeyError(node_id)
            return _as_node(owner.compensation, node_id)
        map_id, bracket, rest = node_id.partition("[")
        template = self._item_templates.get(map_id)
        if not bracket or template is None or not rest.endswith("]"):
            raise KeyError(node_id)
        return _renamed(template, node_id)

    @cached_property
    def map_ids(self) -> frozenset[str]:
        """The map nodes: decide scans every node on every call, so it asks a set."""
        return frozenset(self._item_templates)

    @cached_property
    def _item_templates(self) -> Mapping[str, Node]:
        """Each map's per-item body as a Node, built once: decide looks up every item of
        a map on every call, and building a Node field by field cost ~12 µs an item."""
        return {
            node.id: _as_node(node.spec.node, node.id)
            for node in self.nodes
            if getattr(node.spec, "node", None) is not None  # a map's per-item body
        }

    def downstream_of(self, node_id: str) -> frozenset[str]:
        """Every node reachable from node_id, node_id included."""
        seen: set[str] = set()
        stack = [node_id]
        while stack:
            current = stack.pop()
            if current not in seen:
                seen.add(current)
                stack.extend(self.children[current])
        return frozenset(seen)


def _as_node(body: NodeBody, node_id: str) -> Node:
    return Node(id=node_id, **{f.name: getattr(body, f.name) for f in fields(NodeBody)})


def _renamed(template: Node, node_id: str) -> Node:
    """A copy of a frozen Node under another id, without re-running its constructor."""
    node = object.__new__(Node)
    node.__dict__.update(template.__dict__)
    node.__dict__["id"] = node_id
    return node
