"""`function`: a registered Python function, run on a worker."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from workflows.dsl.checks import Collector, quote
from workflows.kinds.base import NodeKind
from workflows.kinds.fields import Required

if TYPE_CHECKING:
    from workflows.dsl.model import RetryPolicy
    from workflows.dsl.place import Place


@dataclass(frozen=True)
class FunctionSpec:
    #: The registered function's name.
    function: str | None = None


FUNCTION = Required(("function",), 'the name of a registered function, e.g. "std.echo"')


class FunctionKind(NodeKind):
    name = "function"
    fields = ("function",)
    runs_on_worker = True
    heartbeats_progress = True
    executor = "nodes.executors.entries:function"
    schema: ClassVar[Mapping[str, Any]] = {
        "function": {
            "type": "string",
            "pattern": r"\S",
            "description": "function: a registered function's name.",
        }
    }
    requires = (FUNCTION,)

    def parse(
        self, c: Collector, raw: Mapping[str, Any], place: Place, policy: RetryPolicy
    ) -> FunctionSpec:
        if "function" not in raw:
            return FunctionSpec()
        field = place.prefix + "function"
        name = c.string(raw["function"], node=place.scope.node, field=field, what=FUNCTION.what)
        if name is not None and c.function_exists is not None and not c.function_exists(name):
            c.add(
                f"unknown function {quote(name)}: register it with @workflow_function, "
                "or use a built-in such as std.echo",
                node=place.scope.node,
                field=field,
            )
        return FunctionSpec(name)


KIND = FunctionKind()
