"""Test data made through the real code paths (parser, services), never raw inserts."""

from __future__ import annotations

import uuid
from typing import Any

from executions.models import Event, Execution
from executions.services.start import execution_start
from nodes.registry import function_exists
from workflows.dsl.parser import parse_definition
from workflows.models import WorkflowDefinition, WorkflowVersion


def make_version(definition: dict[str, Any], name: str | None = None) -> WorkflowVersion:
    parse_definition(definition, function_exists=function_exists)
    workflow = WorkflowDefinition.objects.create(name=name or f"wf-{uuid.uuid4().hex[:12]}")
    return WorkflowVersion.objects.create(workflow=workflow, version=1, definition=definition)


def start(definition: dict[str, Any], input: Any = None, **kwargs: Any) -> Execution:
    execution, _ = execution_start(version=make_version(definition), input=input or {}, **kwargs)
    return execution


def timeline(execution: Execution) -> list[tuple[int, str, str | None, int | None]]:
    events = Event.objects.filter(execution=execution).order_by("seq")
    return [(e.seq, e.type, e.node_id, e.attempt) for e in events]


def events(
    execution: Execution, type: str | None = None, node_id: str | None = None
) -> list[Event]:
    rows = Event.objects.filter(execution=execution).order_by("seq")
    if type:
        rows = rows.filter(type=type)
    if node_id:
        rows = rows.filter(node_id=node_id)
    return list(rows)


def fan(width: int) -> dict[str, Any]:
    """A definition: one root node, then `width` no-op branches after it."""
    nodes: list[dict[str, Any]] = [{"id": "root", "type": "function", "function": "std.noop"}]
    nodes += [
        {"id": f"f{i}", "type": "function", "function": "std.noop", "depends_on": ["root"]}
        for i in range(width)
    ]
    return {"nodes": nodes}
