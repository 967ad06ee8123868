"""What a node kind is, and what starting one can lead to.

A kind answers for one node type: its DSL fields and their parsing, how a node starts
(`start` returns a `Start`; the engine records it as an event), whether a worker runs
its attempts and with which executor, and the status `task_scheduled` gives it.
Pure Python: no Django; the executor is named by dotted path and imported on the worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from workflows.dsl.templates import render

if TYPE_CHECKING:
    from workflows.dsl.checks import Collector
    from workflows.dsl.limits import Limits
    from workflows.dsl.model import NodeBody, RetryPolicy
    from workflows.dsl.place import Place
    from workflows.kinds.fields import Required

JSON = Any


class LimitExceeded(ValueError):
    """A node would go past a bound of limits.py; the message names the setting."""


@dataclass(frozen=True)
class Schedule:
    """`task_scheduled` with the rendered input: a worker runs it, or the kind waits in
    the orchestrator (an approval for its answer, a map for its items)."""

    input: JSON


@dataclass(frozen=True)
class Wait:
    """`timer_started`: wait until `due`, or `seconds` after the state's now."""

    input: dict[str, Any]
    due: datetime | None = None
    seconds: float = 0.0


@dataclass(frozen=True)
class Complete:
    """`task_completed` at once, in the orchestrator: nothing to run or wait for."""

    output: JSON = None


Start = Schedule | Wait | Complete


S = TypeVar("S")


def spec_of(node: NodeBody, cls: type[S]) -> S:
    """The node's spec as its kind's type: a node built by the parser always has it."""
    spec = node.spec
    if not isinstance(spec, cls):
        raise TypeError(f"a {node.type} node needs a {cls.__name__} spec, not {spec!r}")
    return spec


class NodeKind:
    """One node type. Subclasses set the class attributes and override what differs."""

    name: ClassVar[str]
    #: The DSL fields only this kind has (the common ones are in workflows/dsl/bodies.py).
    fields: ClassVar[tuple[str, ...]] = ()
    #: The article problems use before "<name> node".
    article: ClassVar[str] = "a"
    #: Its attempts run on a worker: task_scheduled queues a message to the nodes queue.
    runs_on_worker: ClassVar[bool] = False
    #: "module:function" the worker calls as function(node, payload, ctx) -> output.
    executor: ClassVar[str | None] = None
    #: What task_scheduled makes of it: a worker's attempt waits to be claimed; a kind
    #: the orchestrator runs is waiting or running from then on.
    scheduled_status: ClassVar[str] = "scheduled"
    #: Its task_scheduled makes more decisions possible in the same decide call.
    schedules_more: ClassVar[bool] = False
    #: It runs its per-item body as tasks `<id>[<index>]` (a map).
    fans_out: ClassVar[bool] = False
    #: It waits for approve/reject (POST .../approve, .../reject).
    approvable: ClassVar[bool] = False
    #: Its heartbeat_timeout_seconds counts from the function's own ctx.heartbeat() calls
    #: (progress), not from the worker being alive (executions/worker/runtime.py).
    heartbeats_progress: ClassVar[bool] = False
    #: It waits in the orchestrator for an answer, and its `timeout_seconds` bounds that
    #: wait with a durable timer (executions/engine/waits.py) instead of a worker's clock.
    times_out_waiting: ClassVar[bool] = False
    #: Its worker starts a child execution and parks the attempt until the child ends
    #: (executions/services/children.py), instead of calling an executor.
    starts_child: ClassVar[bool] = False
    #: The JSON Schema of each of its fields, for GET /schema (workflows/definition_schema.py).
    schema: ClassVar[Mapping[str, Any]] = {}
    #: What a node of this kind must have: the parser reports each missing one before
    #: `parse` runs, and the definition's JSON Schema requires the same.
    requires: ClassVar[tuple[Required, ...]] = ()

    def parse(
        self, c: Collector, raw: Mapping[str, Any], place: Place, policy: RetryPolicy
    ) -> object:
        """The node's `spec` from the kind's own fields (None: it has none); problems go
        to `c` (a definition with problems is never built, so a spec may be partial). A
        field of `requires` that is missing has been reported already."""
        return None

    def bound_schema(self, properties: dict[str, Any], bound: Limits) -> None:
        """Write the bounds in force into its fields' schemas (copies, in `properties`)."""

    def template(self, node: NodeBody) -> JSON:
        """What is rendered when the node is scheduled, and again (with its secrets) on
        the worker."""
        return node.input

    def start(self, node: NodeBody, context: dict[str, Any], now: datetime | None) -> Start:
        """What starting the node records. May raise TemplateError, ValueError or
        TypeError: the engine fails the attempt with it."""
        return Schedule(render(self.template(node), context))
