"""The workflow definitions the scenarios run, and how they are stored as a version."""

from __future__ import annotations

from typing import Any


def noop(node_id: str, depends_on: list[str] | None = None) -> dict[str, Any]:
    node: dict[str, Any] = {"id": node_id, "type": "function", "function": "std.noop"}
    if depends_on:
        node["depends_on"] = depends_on
    return node


def fanout_definition(width: int) -> dict[str, Any]:
    middle = [noop(f"n{i}", ["start"]) for i in range(width)]
    end = noop("end", [n["id"] for n in middle])
    return {"nodes": [noop("start"), *middle, end]}


def chain_definition(length: int) -> dict[str, Any]:
    return {"nodes": [noop(f"c{i}", [f"c{i - 1}"] if i else None) for i in range(length)]}


def map_definition() -> dict[str, Any]:
    """A map of std.noop over the execution's input `items`, at the default max_parallel."""
    node = {"type": "function", "function": "std.noop"}
    return {"nodes": [{"id": "m", "type": "map", "items": "{{ input.items }}", "node": node}]}


RETRY_FOREVER = {
    "nodes": [
        {
            "id": "f",
            "type": "function",
            "function": "std.fail",
            "input": {"message": "bench", "retryable": True},
            "retry_policy": {
                "max_attempts": 1_000_000_000,
                "initial_interval_seconds": 1,
                "backoff_coefficient": 1,
                "max_interval_seconds": 1,
                "jitter": False,
            },
        }
    ]
}

DELAY_HOUR = {"nodes": [{"id": "wait", "type": "delay", "seconds": 3600}, noop("after", ["wait"])]}


def make_version(name: str, definition: dict[str, Any]):
    from nodes.registry import function_exists
    from workflows.dsl.parser import parse_definition
    from workflows.models import WorkflowDefinition, WorkflowVersion

    # stored: the bench's own definitions may pass today's bounds on purpose (RETRY_FOREVER
    # stands for a history longer than WORKFLOW_MAX_ATTEMPTS allows, by operator retries).
    parse_definition(definition, function_exists=function_exists, stored=True)
    workflow = WorkflowDefinition.objects.create(name=name)
    return WorkflowVersion.objects.create(workflow=workflow, version=1, definition=definition)
