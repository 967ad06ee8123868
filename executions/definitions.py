"""Parsed definitions of immutable versions, cached by version id."""

from __future__ import annotations

from functools import lru_cache

from workflows.dsl import Definition
from workflows.dsl.parser import parse_definition
from workflows.models import WorkflowVersion


@lru_cache(maxsize=512)
def _parsed(version_id: int) -> Definition:
    raw = WorkflowVersion.objects.values_list("definition", flat=True).get(pk=version_id)
    # Functions were checked when the version was created; a worker that lacks one
    # reports it as the node's error instead of refusing the whole definition here.
    # Accepted under the bounds of its day: today's settings are not applied again.
    return parse_definition(raw, stored=True)


def definition_for(version_id: int) -> Definition:
    return _parsed(version_id)


def clear_cache() -> None:
    _parsed.cache_clear()
