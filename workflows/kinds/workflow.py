"""`workflow`: a sub-workflow. A worker starts the child execution; the node's result
comes when the child ends (executions/services/children.py)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from workflows.dsl.checks import MAX_INT, Collector, describe, quote
from workflows.kinds.base import NodeKind
from workflows.kinds.fields import Required

if TYPE_CHECKING:
    from workflows.dsl.model import RetryPolicy
    from workflows.dsl.place import Place

#: The same shape as WorkflowDefinition.name: a name outside it can never exist.
WORKFLOW_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,99}\Z")


@dataclass(frozen=True)
class WorkflowSpec:
    #: The child workflow's name, and the version pinned (None: its latest).
    workflow: str | None = None
    version: int | None = None


WORKFLOW = Required(("workflow",), "the name of the workflow to run")


class WorkflowKind(NodeKind):
    name = "workflow"
    fields = ("workflow", "version")
    runs_on_worker = True
    starts_child = True
    schema: ClassVar[Mapping[str, Any]] = {
        "workflow": {
            "type": "string",
            "pattern": f"^{WORKFLOW_NAME.pattern.removesuffix(chr(92) + 'Z')}$",
            "description": "workflow: the child workflow's name.",
        },
        "version": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_INT,
            "description": "workflow: pin a version.",
        },
    }
    requires = (WORKFLOW,)
    # No executor: the worker starts the child itself (executions/worker/runtime.py).

    def parse(
        self, c: Collector, raw: Mapping[str, Any], place: Place, policy: RetryPolicy
    ) -> WorkflowSpec:
        node, p = place.scope.node, place.prefix
        kwargs: dict[str, Any] = {}
        if "workflow" in raw:
            name = raw["workflow"]
            if not isinstance(name, str) or not WORKFLOW_NAME.match(name):
                got = quote(name) if isinstance(name, str) else describe(name)
                c.add(
                    f"must be a workflow name: lowercase letters, digits, '-' and '_' (got {got})",
                    node=node,
                    field=p + "workflow",
                )
            else:
                kwargs["workflow"] = name
        if "version" in raw:
            kwargs["version"] = c.integer(raw["version"], node=node, field=p + "version", minimum=1)
        return WorkflowSpec(**kwargs)


KIND = WorkflowKind()
