"""Tags: a client's labels on an execution ({key: value} strings, inherited by its
children), their bounds, and the filter `?tag=<key>:<value>` (every one must hold)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import connection
from django.db.models import QuerySet
from django.db.models.fields.json import KeyTextTransform
from django.db.models.lookups import Exact

MAX_TAGS = 16
MAX_LENGTH = 128
#: What the API's schema says of tags (the checks below say the same in words).
TAGS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "maxProperties": MAX_TAGS,
    "additionalProperties": {"type": "string", "maxLength": MAX_LENGTH},
    "description": f"Up to {MAX_TAGS} labels, each key and value a string of at most "
    f"{MAX_LENGTH} characters (a key without ':'); a sub-workflow inherits them.",
    "example": {"team": "billing", "env": "prod"},
}


class TagError(ValueError):
    """Tags (or a tag filter) that break a rule: the message names the problem."""


def check_tags(raw: object) -> dict[str, str]:
    """The tags as given, or TagError naming what is wrong with them (None: no tags)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise TagError(
            f'must be an object of strings, like {{"team": "billing"}} (got {_kind(raw)})'
        )
    if len(raw) > MAX_TAGS:
        raise TagError(f"at most {MAX_TAGS} tags (got {len(raw)})")
    for key, value in raw.items():
        _check_key(key)
        if not isinstance(value, str):
            raise TagError(
                f"tag '{key[:MAX_LENGTH]}': the value must be a string (got {_kind(value)})"
            )
        if len(value) > MAX_LENGTH:
            raise TagError(
                f"tag '{key}': the value is {len(value)} characters, at most {MAX_LENGTH}"
            )
    return dict(raw)


def _check_key(key: object) -> None:
    if not isinstance(key, str):
        raise TagError(f"a tag's key must be a string (got {_kind(key)})")
    if not key:
        raise TagError("a tag's key must not be empty")
    if len(key) > MAX_LENGTH:
        raise TagError(f"tag '{key[:32]}…': the key is {len(key)} characters, at most {MAX_LENGTH}")
    if ":" in key:
        raise TagError(f"tag '{key}': a key may not contain ':' (the filter is ?tag=<key>:<value>)")


def parse_filter(value: str) -> tuple[str, str]:
    """`<key>:<value>` as (key, value), or TagError."""
    key, colon, wanted = value.partition(":")
    if not colon:
        raise TagError(f"'{value[:MAX_LENGTH]}' is not <key>:<value>, e.g. team:billing")
    _check_key(key)
    if len(wanted) > MAX_LENGTH:
        raise TagError(f"tag '{key}': the value is {len(wanted)} characters, at most {MAX_LENGTH}")
    return key, wanted


def with_tags(queryset: QuerySet, pairs: Iterable[tuple[str, str]]) -> QuerySet:
    """The executions that have every (key, value). On PostgreSQL one containment test
    (`tags @> {...}`), which the GIN index on tags answers; elsewhere, key by key."""
    wanted: dict[str, str] = {}
    for key, value in pairs:
        if wanted.setdefault(key, value) != value:
            return queryset.none()  # one key, two values: no execution has both
    if connection.vendor == "postgresql":
        return queryset.filter(tags__contains=wanted)
    for key, value in wanted.items():
        # A lookup on a key transform, not tags__<key>: a key may hold "__".
        queryset = queryset.filter(Exact(KeyTextTransform(key, "tags"), value))
    return queryset


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__
