"""Parsing of `delay` bodies: `seconds` or `until`, both bounded by
WORKFLOW_MAX_DELAY_SECONDS; `until_problem` is shared with the engine, which checks a
templated `until` once it is rendered."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from workflows.clock import now
from workflows.dsl.checks import Collector, no_secrets, quote
from workflows.dsl.limits import limits, over
from workflows.dsl.model import RetryPolicy
from workflows.dsl.references import check_templates

if TYPE_CHECKING:
    from workflows.dsl.place import Place


def parse_delay(
    c: Collector, raw: Mapping[str, Any], place: Place, _: RetryPolicy
) -> dict[str, Any]:
    """The delay's `seconds` or `until` (that it has exactly one is the kind's `requires`)."""
    node, p = place.scope.node, place.prefix
    if "seconds" in raw:
        seconds = c.number(raw["seconds"], node=node, field=p + "seconds", minimum=0)
        return {"seconds": c.within(seconds, "max_delay_seconds", node=node, field=p + "seconds")}
    if "until" in raw:
        return {"until": _until(c, raw["until"], place)}
    return {}


def _until(c: Collector, raw: object, place: Place) -> str | None:
    node, field = place.scope.node, place.prefix + "until"
    text = c.string(raw, node=node, field=field, what="an ISO 8601 instant with a timezone")
    if text is None:
        return None
    if "{{" in text:
        check_templates(c, text, scope=no_secrets(place.scope), field=field)
        return text
    try:
        instant = datetime.fromisoformat(text)
    except ValueError:
        instant = None
    if instant is None or instant.tzinfo is None:
        reason = "has no timezone" if instant else "is not an ISO 8601 instant"
        c.add(
            f"{quote(text)} {reason}: write e.g. 2030-01-01T09:00:00+00:00 or ...Z",
            node=node,
            field=field,
        )
        return None
    problem = until_problem(instant, now()) if c.limited else None
    if problem:
        c.add(f"{quote(text)}: {problem}", node=node, field=field)
        return None
    return text


def until_problem(instant: datetime, now: datetime) -> str | None:
    """Why a delay may not wait until `instant` (aware), seen at `now`; None if it may.

    Shared by the parser (a literal `until`) and the engine (a templated one)."""
    try:
        seconds = (instant.astimezone(UTC) - now).total_seconds()
    except (OverflowError, ValueError):
        return "out of the range of dates the engine can store"
    if seconds > limits().max_delay_seconds:
        return over("max_delay_seconds", what="waiting until then", got=round(seconds))
    return None
