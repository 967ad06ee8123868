"""Workflow-to-workflow cycles: refused when the version that closes one is created.

A `workflow` node names another workflow and optionally pins its version; unpinned it runs
the latest. Following those references from the new version (through the pinned, or else
the latest, version of each workflow reached) must never lead back to the new version: if
it does, executions of it would start children without end. A cycle that slips through
anyway (two versions created at the same moment) is stopped by WORKFLOW_MAX_DEPTH.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from workflows.dsl.problems import DefinitionError, Problem
from workflows.models import WorkflowVersion

#: Versions looked at per check, at most: a bound on the work one request can cause.
MAX_VISITS = 500


@dataclass(frozen=True)
class Reference:
    node: str
    field: str
    workflow: str
    version: int | None


def references(raw: Any) -> Iterator[Reference]:
    """The `workflow` references of a raw (validated) definition, map bodies and
    compensations included."""
    nodes = raw.get("nodes") if isinstance(raw, Mapping) else None
    for node in nodes if isinstance(nodes, list) else ():
        if not isinstance(node, Mapping):
            continue
        node_id = str(node.get("id", "?"))
        for prefix, body in (
            ("", node),
            ("node.", node.get("node")),
            ("compensation.", node.get("compensation")),
        ):
            if isinstance(body, Mapping) and body.get("type") == "workflow":
                name, version = body.get("workflow"), body.get("version")
                if isinstance(name, str):
                    pinned = version if isinstance(version, int) else None
                    yield Reference(node_id, f"{prefix}workflow", name, pinned)


#: Versions not stored yet, by workflow name: (number, definition). A sync stores many
#: versions at once, and a cycle may be closed only by two of them together.
Planned = Mapping[str, tuple[int, Any]]


def check_no_cycle(*, name: str, number: int, raw: Any, planned: Planned | None = None) -> None:
    """Raise DefinitionError if version `number` of workflow `name`, with definition `raw`,
    would reach itself through `workflow` nodes (`planned`: versions to be stored with it,
    each the latest of its workflow)."""
    pending = {**(planned or {}), name: (number, raw)}
    for ref in references(raw):
        path = _path_back(name, number, ref, pending)
        if path is not None:
            shown = " -> ".join(path)
            raise DefinitionError(
                [
                    Problem(
                        f"workflow '{ref.workflow}' leads back to '{name}': {shown}; a "
                        "workflow may not call itself, directly or through others (pin "
                        "an earlier version with 'version' to call that one instead)",
                        node=ref.node,
                        field=ref.field,
                    )
                ]
            )


def _path_back(name: str, number: int, first: Reference, pending: Planned) -> list[str] | None:
    """The names from `name` back to it through `first`, or None (depth-first)."""
    latest = {key: planned_number for key, (planned_number, _) in pending.items()}
    stack: list[tuple[Reference, list[str]]] = [(first, [name])]
    seen: set[tuple[str, int]] = set()
    while stack and len(seen) < MAX_VISITS:
        ref, path = stack.pop()
        target = _resolve(ref, latest)
        if target is None:
            continue  # no such workflow (yet): it fails at run time, with its own error
        label = ref.workflow if ref.version is None else f"{ref.workflow}@v{ref.version}"
        if target == (name, number):
            return [*path, label]
        if target in seen:
            continue
        seen.add(target)
        stack.extend((nxt, [*path, label]) for nxt in references(_definition(*target, pending)))
    return None


def _resolve(ref: Reference, latest: dict[str, int]) -> tuple[str, int] | None:
    if ref.version is not None:
        return ref.workflow, ref.version
    if ref.workflow not in latest:
        found = (
            WorkflowVersion.objects.filter(workflow__name=ref.workflow)
            .order_by("-version")
            .values_list("version", flat=True)
            .first()
        )
        if found is None:
            return None
        latest[ref.workflow] = found
    return ref.workflow, latest[ref.workflow]


def _definition(workflow: str, version: int, pending: Planned) -> Any:
    planned_number, raw = pending.get(workflow, (None, None))
    if planned_number == version:
        return raw
    return (
        WorkflowVersion.objects.filter(workflow__name=workflow, version=version)
        .values_list("definition", flat=True)
        .first()
    )
