"""Corrupting a version row behind the ORM's back: the realistic trigger for an engine
error inside one execution (bad data, or a bug, met wherever the engine reads it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection

from executions.definitions import clear_cache

#: What the parser refuses: "DefinitionError: nodes: must be a non-empty list ...".
GARBAGE = {"nodes": "not a list"}


def set_definition(version_id: int, definition: Any) -> None:
    """Raw SQL, as an operator's slip or a broken migration would; this process's parsed
    copies are dropped (other processes keep theirs until they read the row again)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE workflows_workflowversion SET definition = %s WHERE id = %s",
            [json.dumps(definition), version_id],
        )
    clear_cache()


def definition_of(version_id: int) -> Any:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT definition FROM workflows_workflowversion WHERE id = %s", [version_id]
        )
        (raw,) = cursor.fetchone()
    return json.loads(raw) if isinstance(raw, str) else raw


@contextmanager
def corrupted_definition(version_id: int) -> Iterator[None]:
    """The version unreadable inside the block, restored after it (so the end-of-test
    replay check can read it)."""
    original = definition_of(version_id)
    set_definition(version_id, GARBAGE)
    try:
        yield
    finally:
        set_definition(version_id, original)
