"""`delay`: a durable timer in the orchestrator, `seconds` or `until` (workflows/dsl/delays.py
parses both)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from workflows.dsl.checks import MAX_SECONDS, Collector
from workflows.dsl.delays import parse_delay, until_problem
from workflows.dsl.limits import limits, over
from workflows.dsl.templates import render
from workflows.kinds.base import LimitExceeded, NodeKind, Wait, spec_of
from workflows.kinds.fields import Required

if TYPE_CHECKING:
    from workflows.dsl.limits import Limits
    from workflows.dsl.model import NodeBody, RetryPolicy
    from workflows.dsl.place import Place


@dataclass(frozen=True)
class DelaySpec:
    #: Seconds to wait, or an ISO 8601 instant (a template allowed) to wait until.
    seconds: float | None = None
    until: str | None = None


WHEN = Required(
    ("seconds", "until"),
    "seconds (a number >= 0) or until (an ISO 8601 instant with a timezone, "
    'e.g. "2030-01-01T09:00:00+00:00")',
)


class DelayKind(NodeKind):
    name = "delay"
    fields = ("seconds", "until")
    schema: ClassVar[Mapping[str, Any]] = {
        "seconds": {
            "type": "number",
            "minimum": 0,
            "description": "delay: how long.",
        },
        "until": {
            "type": "string",
            "pattern": r"\S",
            "description": "delay: an ISO 8601 instant with an offset, or a template.",
        },
    }
    requires = (WHEN,)

    def parse(
        self, c: Collector, raw: Mapping[str, Any], place: Place, policy: RetryPolicy
    ) -> DelaySpec:
        return DelaySpec(**parse_delay(c, raw, place, policy))

    def bound_schema(self, properties: dict[str, Any], bound: Limits) -> None:
        properties["seconds"]["maximum"] = min(bound.max_delay_seconds, MAX_SECONDS)

    def start(self, node: NodeBody, context: dict[str, Any], now: datetime | None) -> Wait:
        spec = spec_of(node, DelaySpec)
        if spec.until is not None:
            until = str(render(spec.until, context))
            due = datetime.fromisoformat(until)
            if due.tzinfo is None:
                raise ValueError(f"until '{until}' has no timezone: add one, e.g. +00:00")
            problem = until_problem(due, now) if now is not None else None
            if problem:
                raise LimitExceeded(f"until {until[:60]!r}: {problem}")
            return Wait({"until": until}, due=due)
        seconds = float(spec.seconds or 0)
        if seconds > limits().max_delay_seconds:  # a version stored before the bound
            raise LimitExceeded(over("max_delay_seconds", what="seconds", got=seconds))
        return Wait({"seconds": seconds}, seconds=seconds)


KIND = DelayKind()
