"""`signal`: waits in the orchestrator for POST /executions/{id}/signals/{name}; its
output is the signal's data. A signal sent before the node waits is kept and delivered
when it does (executions/engine/waits.py)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from workflows.dsl.checks import Collector
from workflows.kinds.base import NodeKind, Schedule, spec_of
from workflows.kinds.fields import Required

if TYPE_CHECKING:
    from workflows.dsl.model import NodeBody, RetryPolicy
    from workflows.dsl.place import Place

#: A signal's name: one URL path segment.
SIGNAL_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,100}\Z")
SIGNAL = Required(("signal",), "a name of 1 to 100 letters, digits, '_', '.', ':' or '-'")


@dataclass(frozen=True)
class SignalSpec:
    #: The name POST /executions/{id}/signals/{name} sends.
    name: str = ""


class SignalKind(NodeKind):
    name = "signal"
    fields = ("signal",)
    scheduled_status = "waiting"
    # A signal kept from before the node waited is delivered in the same decide call.
    schedules_more = True
    times_out_waiting = True
    schema: ClassVar[Mapping[str, Any]] = {
        "signal": {
            "type": "string",
            "pattern": f"^{SIGNAL_NAME.pattern.removesuffix(chr(92) + 'Z')}$",
            "description": "signal: the name POST /executions/{id}/signals/{name} sends.",
        }
    }
    requires = (SIGNAL,)

    def parse(
        self, c: Collector, raw: Mapping[str, Any], place: Place, policy: RetryPolicy
    ) -> SignalSpec:
        if "signal" not in raw:
            return SignalSpec()
        value = raw["signal"]
        if not isinstance(value, str) or not SIGNAL_NAME.match(value):
            c.add(
                f"must be {SIGNAL.what} (got {repr(value)[:60]})",
                node=place.scope.node,
                field=place.prefix + "signal",
            )
            return SignalSpec()
        return SignalSpec(value)

    def start(self, node: NodeBody, context: dict[str, Any], now: datetime | None) -> Schedule:
        return Schedule({"signal": spec_of(node, SignalSpec).name})


KIND = SignalKind()
