"""Field checks the kinds share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from workflows.dsl.checks import Collector

if TYPE_CHECKING:
    from workflows.dsl.bodies import Place


def required(c: Collector, raw: Mapping[str, Any], key: str, place: Place, what: str) -> bool:
    """Whether `key` is there; if not, a problem saying what it should be."""
    if key not in raw:
        c.add(f"is required: {what}", node=place.scope.node, field=place.prefix + key)
        return False
    return True
