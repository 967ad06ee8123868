"""`map`: dynamic fan-out. The map runs in the orchestrator while its item tasks
`<id>[<index>]` run its `node` body once per item (executions/engine/maps.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from workflows.dsl.checks import Collector, Scope, no_secrets
from workflows.dsl.limits import limits, over
from workflows.dsl.place import Place
from workflows.dsl.references import check_items
from workflows.dsl.templates import check_size, search
from workflows.kinds.base import LimitExceeded, NodeKind, Schedule, spec_of
from workflows.kinds.fields import Required

if TYPE_CHECKING:
    from workflows.dsl.limits import Limits
    from workflows.dsl.model import NodeBody, RetryPolicy


@dataclass(frozen=True)
class MapSpec:
    #: An expression that yields the list of items.
    items: str | None = None
    #: The body each item runs, as the task `<map id>[<index>]`.
    node: NodeBody | None = None
    #: Items running at once; None: WORKFLOW_MAP_DEFAULT_MAX_PARALLEL.
    max_parallel: int | None = None


ITEMS = Required(("items",), "an expression that yields a list, e.g. input.items")
BODY = Required(("node",), 'the body run per item, e.g. {"type": "function", ...}')


class MapKind(NodeKind):
    name = "map"
    fields = ("items", "node", "max_parallel")
    scheduled_status = "running"
    schedules_more = True  # its items start in the next step of the same decide call
    fans_out = True
    schema: ClassVar[Mapping[str, Any]] = {
        "items": {
            "type": "string",
            "pattern": r"\S",
            "description": "map: an expression that yields a list.",
        },
        "node": {"$ref": "#/components/schemas/NodeBody"},
        "max_parallel": {"type": "integer", "minimum": 1},
    }
    requires = (ITEMS, BODY)

    def parse(
        self, c: Collector, raw: Mapping[str, Any], place: Place, policy: RetryPolicy
    ) -> MapSpec:
        node, p = place.scope.node, place.prefix
        kwargs: dict[str, Any] = {}
        if "items" in raw:
            kwargs["items"] = check_items(
                c, raw["items"], scope=no_secrets(place.scope), field=p + "items"
            )
        if "node" in raw:
            body = Place(
                scope=Scope(node=node, owner=place.scope.owner, in_map=True),
                prefix=p + "node.",
                label="a map's node body",
                base_policy=policy,
                build=place.build,
                no_map="a map's node cannot be a map: run the inner fan-out in a sub-workflow",
            )
            kwargs["node"] = place.build(c, raw["node"], body)
        if "max_parallel" in raw:
            parallel = c.integer(raw["max_parallel"], node=node, field=p + "max_parallel")
            kwargs["max_parallel"] = c.within(
                parallel, "map_max_parallel", node=node, field=p + "max_parallel"
            )
        return MapSpec(**kwargs)

    def bound_schema(self, properties: dict[str, Any], bound: Limits) -> None:
        properties["max_parallel"]["maximum"] = bound.map_max_parallel
        properties["items"]["maxLength"] = bound.max_expression_length

    def start(self, node: NodeBody, context: dict[str, Any], now: datetime | None) -> Schedule:
        expression = spec_of(node, MapSpec).items or ""
        items = search(expression, context)
        if not isinstance(items, list):
            raise TypeError(f"items '{expression}' gave {type(items).__name__}, not a list")
        if len(items) > limits().map_max_items:
            raise LimitExceeded(over("map_max_items", what="the map", got=len(items)))
        check_size(items, what="the map's items")
        return Schedule({"items": items})


KIND = MapKind()
