"""`approval`: waits in the orchestrator for approve or reject (POST .../approve or
/reject by one of its `approvers`), or for what its timeout makes of it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from workflows.dsl.checks import Collector
from workflows.kinds.base import NodeKind

if TYPE_CHECKING:
    from workflows.dsl.model import RetryPolicy
    from workflows.dsl.place import Place

#: An approver: "group:<name>" or "user:<username>" (Django's own groups and users).
APPROVER = re.compile(r"(group|user):[\w.@+ -]{1,150}\Z")


@dataclass(frozen=True)
class ApprovalSpec:
    #: Who may answer ("group:<name>", "user:<username>"); None: anyone with the
    #: executions.approve_task permission.
    approvers: tuple[str, ...] | None = None
    #: What timeout_seconds without an answer makes of the node: "reject" (it fails as if
    #: rejected), "approve", or "fail" (task_timed_out: its retry_policy may wait again).
    on_timeout: str = "reject"


ON_TIMEOUT = ("reject", "approve", "fail")


class ApprovalKind(NodeKind):
    name = "approval"
    fields = ("approvers", "on_timeout")
    article = "an"
    scheduled_status = "waiting"
    approvable = True
    times_out_waiting = True
    schema: ClassVar[Mapping[str, Any]] = {
        "approvers": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "string",
                "pattern": f"^{APPROVER.pattern.removesuffix(chr(92) + 'Z')}$",
            },
            "description": 'approval: who may answer, e.g. ["group:finance", "user:ada"].',
        },
        "on_timeout": {
            "type": "string",
            "enum": list(ON_TIMEOUT),
            "description": "approval: what timeout_seconds without an answer does "
            "(default reject).",
        },
    }

    def parse(
        self, c: Collector, raw: Mapping[str, Any], place: Place, policy: RetryPolicy
    ) -> ApprovalSpec:
        on_timeout = raw.get("on_timeout", "reject")
        if on_timeout not in ON_TIMEOUT:
            c.add(
                f"must be one of {', '.join(ON_TIMEOUT)} (got {on_timeout!r})",
                node=place.scope.node,
                field=place.prefix + "on_timeout",
            )
            on_timeout = "reject"
        if "approvers" not in raw:
            return ApprovalSpec(on_timeout=on_timeout)
        value = raw["approvers"]
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(v, str) and APPROVER.match(v) for v in value)
        ):
            c.add(
                'must be a non-empty list of "group:<name>" or "user:<username>", '
                'e.g. ["group:finance", "user:ada"]',
                node=place.scope.node,
                field=place.prefix + "approvers",
            )
            return ApprovalSpec(on_timeout=on_timeout)
        return ApprovalSpec(tuple(value), on_timeout)


KIND = ApprovalKind()
