"""`parse_definition`: a version's JSON definition in, a validated `Definition` out.

Every problem is collected, not just the first, and each names the node, the field and
what is expected instead. Whatever the input, the only exception is DefinitionError.
Pure Python: no Django.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from workflows.dsl.bodies import build_body, parse_body
from workflows.dsl.checks import Collector, Scope, describe, quote
from workflows.dsl.concurrency import parse_concurrency
from workflows.dsl.graph import find_cycles, upstream
from workflows.dsl.limits import limits, over
from workflows.dsl.model import TRIGGER_RULES, Definition, Node, RetryPolicy
from workflows.dsl.place import Place
from workflows.dsl.policy import parse_policy
from workflows.dsl.problems import DefinitionError, Problem
from workflows.dsl.references import check_bare, check_declared_secrets, check_templates

TOP_FIELDS = (
    "nodes",
    "retry_policy",
    "output",
    "secrets",
    "compensate_on_cancel",
    "concurrency",
    "retention_days",
    "timeout_seconds",
)
NODE_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}\Z")
_NODE_EXAMPLE = '{"id": "a", "type": "function", "function": "std.echo"}'


def parse_definition(
    raw: object, *, function_exists: Callable[[str], bool] | None = None, stored: bool = False
) -> Definition:
    """Validate a definition and build its typed form, or raise DefinitionError.

    `function_exists` answers whether a `function` node's function is registered; when
    None, function names are not checked. `stored`: a version accepted earlier, parsed
    again to run it; the bounds of limits.py held when it was accepted and are not
    applied again (a lowered setting must not break executions of existing versions).
    """
    c = Collector(function_exists, limited=not stored)
    if c.limited and not _small_enough(c, raw):
        raise DefinitionError(c.problems)
    definition = _definition(c, raw)
    if c.problems or definition is None:
        raise DefinitionError(c.problems or [Problem("the definition is invalid")])
    return definition


class _Entry:
    """A raw node with how problems name it and, if its id is usable, that id."""

    def __init__(self, label: str, raw: Mapping[str, Any], node_id: str | None) -> None:
        self.label, self.raw, self.node_id = label, raw, node_id


def _definition(c: Collector, raw: object) -> Definition | None:
    top = c.mapping(
        raw, node=None, field="", what=f'a JSON object like {{"nodes": [{_NODE_EXAMPLE}]}}'
    )
    if top is None:
        return None
    c.unknown_keys(top, TOP_FIELDS, node=None, prefix="", what="a definition")
    policy = RetryPolicy()
    if "retry_policy" in top:
        policy = parse_policy(c, top["retry_policy"], base=policy, node=None, field="retry_policy")
    raw_nodes = top.get("nodes")
    if not isinstance(raw_nodes, list) or not raw_nodes:
        got = "an empty list" if raw_nodes == [] else describe(raw_nodes)
        c.add(
            f"must be a non-empty list of nodes like {_NODE_EXAMPLE} (got {got})",
            node=None,
            field="nodes",
        )
        return None
    if c.limited and len(raw_nodes) > limits().max_nodes:
        too_many = over("max_nodes", what="the definition", got=len(raw_nodes))
        c.add(f"{too_many}: split the work into sub-workflows", node=None, field="nodes")
        return None
    entries = _identify(c, raw_nodes)
    ids = [e.node_id for e in entries if e.node_id is not None]
    nodes = tuple(_node(c, entry, ids, policy) for entry in entries)
    parents = {
        node.id: _usable_deps(node, set(ids))
        for entry, node in zip(entries, nodes, strict=True)
        if entry.node_id is not None
    }
    for cycle in find_cycles(parents):
        c.add(
            f"cycle: {' -> '.join(cycle)}; remove one of these dependencies",
            node=cycle[0],
            field="depends_on",
        )
    if "output" in top:
        check_templates(
            c, top["output"], scope=Scope(node=None, owner=None, secrets_ok=False), field="output"
        )
    _check_references(c, parents, ids)
    check_declared_secrets(c, top)
    saga = top.get("compensate_on_cancel", False)
    if not isinstance(saga, bool):
        c.add(
            f"must be true or false (got {describe(saga)})", node=None, field="compensate_on_cancel"
        )
        saga = False
    concurrency = parse_concurrency(c, top["concurrency"]) if "concurrency" in top else None
    retention = None
    if "retention_days" in top:
        retention = c.integer(top["retention_days"], node=None, field="retention_days")
    timeout = None
    if "timeout_seconds" in top:
        timeout = c.number(
            top["timeout_seconds"], node=None, field="timeout_seconds", exclusive=True
        )
    return Definition(
        nodes=nodes,
        retry_policy=policy,
        output=top.get("output"),
        compensate_on_cancel=saga,
        concurrency=concurrency,
        retention_days=retention,
        timeout_seconds=timeout,
    )


def _small_enough(c: Collector, raw: object) -> bool:
    """The definition's compact JSON fits WORKFLOW_MAX_DEFINITION_BYTES. Checked first, so
    that validating a huge definition never costs more than measuring it."""
    try:
        size = len(json.dumps(raw, separators=(",", ":"), ensure_ascii=False).encode())
    except (TypeError, ValueError, RecursionError):
        return True  # not plain JSON: the checks that follow say where
    if size > limits().max_definition_bytes:
        c.add(over("max_definition_bytes", what="the definition", got=size), node=None, field="")
        return False
    return True


def _identify(c: Collector, raw_nodes: list[Any]) -> list[_Entry]:
    entries: list[_Entry] = []
    first_index: dict[str, int] = {}
    for index, raw in enumerate(raw_nodes):
        label = f"#{index}"
        if not isinstance(raw, Mapping):
            c.add(
                f"each node must be an object like {_NODE_EXAMPLE} (got {describe(raw)})",
                node=label,
                field=None,
            )
            continue
        node_id = raw.get("id")
        if "id" not in raw:
            c.add(
                "is required: a name like fetch_user, unique in the definition",
                node=label,
                field="id",
            )
        elif not isinstance(node_id, str) or not NODE_ID.match(node_id):
            got = quote(node_id) if isinstance(node_id, str) else describe(node_id)
            c.add(
                "must start with a letter or '_', then letters, digits or '_', 64 at most "
                f"(^[A-Za-z_][A-Za-z0-9_]{{0,63}}$; got {got})",
                node=label,
                field="id",
            )
        elif node_id in first_index:
            c.add(
                f"duplicate id '{node_id}': node #{first_index[node_id]} already has it; "
                "give every node its own id",
                node=node_id,
                field="id",
            )
            label = node_id
        else:
            first_index[node_id] = index
            entries.append(_Entry(node_id, raw, node_id))
            continue
        entries.append(_Entry(label, raw, None))
    return entries


def _node(c: Collector, entry: _Entry, ids: Sequence[str], policy: RetryPolicy) -> Node:
    label, raw = entry.label, entry.raw
    scope = Scope(node=label, owner=entry.node_id)
    place = Place(scope=scope, prefix="", label=None, base_policy=policy, build=build_body)
    kwargs = parse_body(c, raw, place)
    graph: dict[str, Any] = {"id": entry.node_id or label}
    if "depends_on" in raw:
        graph["depends_on"] = _depends_on(c, raw["depends_on"], entry, ids)
    if "when" in raw:
        graph["when"] = check_bare(
            c,
            raw["when"],
            scope=Scope(node=label, owner=entry.node_id, secrets_ok=False),
            field="when",
            example="input.enabled",
        )
    if "trigger_rule" in raw:
        rule = raw["trigger_rule"]
        if isinstance(rule, str) and rule in TRIGGER_RULES:
            graph["trigger_rule"] = rule
        else:
            got = quote(rule) if isinstance(rule, str) else describe(rule)
            c.add(
                f"must be one of {', '.join(TRIGGER_RULES)} (got {got})",
                node=label,
                field="trigger_rule",
            )
    if "compensation" in raw:
        place = Place(
            scope=Scope(node=label, owner=entry.node_id, self_ok=True),
            prefix="compensation.",
            label="a compensation",
            base_policy=policy,
            build=build_body,
            no_map="a compensation cannot be a map: undo the fan-out in a function or sub-workflow",
        )
        graph["compensation"] = build_body(c, raw["compensation"], place)
    return Node(**kwargs, **graph)


def _depends_on(c: Collector, raw: object, entry: _Entry, ids: Sequence[str]) -> tuple[str, ...]:
    label = entry.label
    if not isinstance(raw, list):
        c.add(
            f'must be a list of node ids, e.g. ["a", "b"] (got {describe(raw)})',
            node=label,
            field="depends_on",
        )
        return ()
    known = set(ids)
    deps: list[str] = []
    for i, dep in enumerate(raw):
        field = f"depends_on[{i}]"
        if not isinstance(dep, str):
            c.add(f"must be a node id (got {describe(dep)})", node=label, field=field)
        elif dep == entry.node_id:
            c.add("a node cannot depend on itself: remove it", node=label, field=field)
        elif dep in deps:
            c.add(f"'{dep}' is listed twice: list each dependency once", node=label, field=field)
        elif dep not in known:
            c.add(f"unknown node {quote(dep)}; known ids: {_listing(ids)}", node=label, field=field)
        else:
            deps.append(dep)
    return tuple(deps)


def _usable_deps(node: Node, ids: set[str]) -> list[str]:
    return [dep for dep in node.depends_on if dep in ids and dep != node.id]


def _check_references(
    c: Collector, parents: Mapping[str, Sequence[str]], ids: Sequence[str]
) -> None:
    known = set(ids)
    ancestors: dict[str, frozenset[str]] = {}
    reported: set[tuple[str | None, str, str]] = set()
    for ref in c.refs:
        scope, target = ref.scope, ref.node_id
        owner = scope.owner
        if target not in known:
            message = f"template references unknown node '{target}'; known ids: {_listing(ids)}"
        elif owner is None or (target == owner and scope.self_ok):
            continue
        elif target == owner:
            message = (
                f"template references node '{target}' itself: a node cannot read its own output"
            )
        else:
            if owner not in ancestors:
                ancestors[owner] = upstream(parents, owner)
            if target in ancestors[owner]:
                continue
            message = (
                f"template references node '{target}', which is not upstream of '{owner}': "
                "add it to depends_on"
            )
        if (scope.node, ref.field, message) not in reported:
            reported.add((scope.node, ref.field, message))
            c.add(message, node=scope.node, field=ref.field)


def _listing(ids: Sequence[str], limit: int = 10) -> str:
    if not ids:
        return "(none)"
    shown = ", ".join(ids[:limit])
    return shown + (f", ... ({len(ids) - limit} more)" if len(ids) > limit else "")
