"""docs/reference/dsl.md from the definition's JSON Schema (workflows.definition_schema):
the definition's fields, every node type with its fields, the retry policy, the trigger
rules, the template context and the functions that ship with the engine.

A field's meaning is its schema's description; the few the schema leaves bare are
described in FIELDS below. A field, trigger rule or template root with neither fails the
generator, naming where its description goes."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from nodes.registry import function_names, get_function
from scripts.docs_reference.markdown import (
    GENERATED,
    Undocumented,
    as_json,
    code,
    first_paragraph,
    table,
)
from workflows.definition_schema import component_name, components
from workflows.dsl.model import TRIGGER_RULES
from workflows.dsl.templates import ROOTS
from workflows.kinds import all_kinds

#: Meanings of the fields whose schema has no description.
FIELDS: Mapping[str, str] = {
    "nodes": "The graph's nodes (each a [node](#nodes) of one of the types below).",
    "output": "The execution's output: any JSON, its strings may hold `{{ templates }}`, "
    "rendered when every node has settled. Absent: null.",
    "retry_policy": "How failed attempts are retried ([retry policy](#retry-policy)); on a "
    "node it replaces the definition's.",
    "id": "Unique in the definition; the task's name in the API and the events.",
    "type": "The node type.",
    "depends_on": "Ids of the nodes that must settle first (subject to `trigger_rule`); "
    "the graph must be acyclic.",
    "trigger_rule": "When the node runs, given how its parents ended "
    "([trigger rules](#trigger-rules)). Default `all_success`.",
    "compensation": "A node body (no `id`/`depends_on`) run to undo this node when the "
    "workflow fails (or, with `compensate_on_cancel`, is cancelled) after it succeeded; "
    "compensations run in reverse completion order.",
    "function": "The registered function to call (`@workflow_function`), e.g. `std.echo`.",
    "node": "The node body run once per item, with `{{ item }}` and `{{ index }}` in its "
    "templates; its tasks are `<id>[0]`, `<id>[1]`, ...",
    "max_parallel": "Item tasks running at once (default WORKFLOW_MAP_DEFAULT_MAX_PARALLEL).",
    "max_attempts": "Attempts in all, the first included (1: no retry).",
    "backoff_coefficient": "Each retry waits this many times longer than the one before.",
    "max_interval_seconds": "The longest wait between two attempts.",
    "jitter": "Spread each wait randomly (deterministically per execution, node and "
    "attempt) between half and all of it.",
    "non_retryable_errors": "Error types (an exception's class name, or a function's "
    "`type`) that fail the node at once, retries left or not.",
    "initial_interval_seconds": "The wait before the first retry.",
    "version": "The child workflow's version; absent: its latest.",
    "headers": "Request headers (values may hold templates).",
    "params": "Query parameters.",
    "body": "A text body (instead of `json`).",
}

#: What each trigger rule asks of the node's parents (Airflow's names and meanings).
TRIGGER_RULE_MEANINGS: Mapping[str, str] = {
    "all_success": "Every parent succeeded (a skipped or failed parent skips the node).",
    "none_failed": "No parent failed: each succeeded or was skipped.",
    "all_done": "Every parent settled, however it ended.",
    "one_success": "As soon as one parent succeeded.",
    "one_failed": "As soon as one parent failed.",
    "none_failed_min_one_success": "No parent failed and at least one succeeded.",
    "all_failed": "Every parent failed.",
    "none_skipped": "No parent was skipped.",
    "one_done": "As soon as one parent succeeded or failed.",
    "all_skipped": "Every parent was skipped.",
    "all_done_min_one_success": "Every parent settled and at least one succeeded.",
    "always": "At once, as a root would, whatever the parents are doing (they only give "
    "its templates something to read).",
}

#: What each root of the template context holds.
ROOT_MEANINGS: Mapping[str, str] = {
    "input": "The execution's input.",
    "nodes": '`{"<id>": {"output": ..., "status": ...}}` for every node that has '
    "recorded something so far (a template may read only nodes upstream of its own).",
    "execution": '`{"id": "<execution id>"}`.',
    "secrets": "`{{ secrets.NAME }}`: the server's secret NAME (setting "
    "`WORKFLOW_SECRETS`), resolved when the node runs and never written to an event; "
    "only the names the definition's `secrets` lists.",
    "item": "Inside a map's `node` only: this task's item.",
    "index": "Inside a map's `node` only: this task's index in the items, from 0.",
}

_REF = "#/components/schemas/"


def _anchor(component: str) -> str:
    return component.lower()


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def summary(schema: Mapping[str, Any]) -> str:
    """A field's schema in a few words: its type and constraints."""
    if "$ref" in schema:
        name = schema["$ref"].removeprefix(_REF)
        return f"[{name}](#{_anchor(name)})"
    if "enum" in schema:
        return "one of " + ", ".join(code(value) for value in schema["enum"])
    if "oneOf" in schema:
        return " or ".join(summary(option) for option in schema["oneOf"])
    kind = schema.get("type", "any JSON")
    parts = [str(kind)]
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        parts = [f"array of {summary(schema['items'])}"]
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None:
        parts.append(f"{'>' if schema.get('exclusiveMinimum') else '≥'} {_number(low)}")
    if high is not None:
        parts.append(f"≤ {_number(high)}")
    for key, word in (("minLength", "min length"), ("maxLength", "max length")):
        if key in schema:
            parts.append(f"{word} {schema[key]}")
    if "pattern" in schema and schema["pattern"] != r"\S":
        parts.append(f"matching {code(schema['pattern'])}")
    if kind == "object" and isinstance(schema.get("properties"), Mapping):
        parts.append("with " + ", ".join(code(name) for name in schema["properties"]))
    return ", ".join(parts)


def meaning(name: str, schema: Mapping[str, Any], where: str) -> str:
    text = FIELDS.get(name) or schema.get("description")
    if not text:
        raise Undocumented(
            f"{where}: field {name!r} has no description: give its schema one (workflows/"
            "kinds/ or workflows/definition_schema.py) or add it to FIELDS in "
            "scripts/docs_reference/dsl_page.py"
        )
    return str(text)


def _without_function_names(properties: Mapping[str, Any]) -> Mapping[str, Any]:
    """The schema lists the functions registered where it is made: a page lists the
    engine's own (below), not those of the project that generated it."""
    if "function" not in properties:
        return properties
    function = {k: v for k, v in properties["function"].items() if k != "enum"}
    return {**properties, "function": function}


def fields_table(component: str, schema: Mapping[str, Any]) -> str:
    required = set(schema.get("required", ()))
    rows = [
        (
            code(name),
            "yes" if name in required else "",
            summary(field),
            meaning(name, field, component),
        )
        for name, field in _without_function_names(schema["properties"]).items()
    ]
    return table(("Field", "Required", "Schema", "Meaning"), rows)


def _kind_intro(kind: object) -> str:
    module = type(kind).__module__
    text = first_paragraph(sys.modules[module].__doc__)
    if not text:
        raise Undocumented(f"{module} has no docstring saying what its node type does")
    # The docstring opens with "`<type>`: ", which the page has already said.
    return text.split(": ", 1)[1] if text.startswith("`") and ": " in text else text


def _listed(items: Mapping[str, str], known: tuple[str, ...] | frozenset[str], what: str) -> str:
    missing = [name for name in known if name not in items]
    if missing:
        raise Undocumented(
            f"{what} {missing} have no meaning: add them to scripts/docs_reference/dsl_page.py"
        )
    return table(("Name", "Meaning"), [(code(name), items[name]) for name in known])


def _in_order(names: frozenset[str], known: Mapping[str, str]) -> tuple[str, ...]:
    """The names in the order `known` describes them; any it does not know, last."""
    order = list(known)
    return tuple(sorted(names, key=lambda n: (order.index(n) if n in known else len(order), n)))


def _functions() -> str:
    rows = []
    for name in sorted(n for n in function_names() if n.startswith("std.")):
        doc = first_paragraph(get_function(name).__doc__)
        if not doc:
            raise Undocumented(f"function {name} has no docstring (nodes/std.py)")
        rows.append((code(name), doc))
    return table(("Function", "What it does"), rows)


def render() -> str:
    schemas = components()
    out = [
        GENERATED,
        "# Workflow definitions (the DSL)\n\n",
        "A workflow version's `definition` is a JSON object. This page is generated from "
        "its JSON Schema (served in `GET /schema`, and by `python manage.py "
        "workflow_schema` for editors), with the bounds of the default settings. The "
        "validator checks more than the schema can: that `depends_on` names existing "
        "nodes, that the graph is acyclic, that templates parse and read only upstream "
        "nodes; a refused definition gets a 400 naming the node and field.\n\n",
        "## Definition\n\n",
        fields_table("Definition", schemas["Definition"]),
        "\n## Nodes\n\n",
        '<a id="node"></a>\n\n',
        "Every node has `id` and `type`; the fields every type shares are `depends_on`, "
        "`when`, `trigger_rule`, `compensation`, `input`, `retry_policy`, "
        "`timeout_seconds`, `heartbeat_timeout_seconds` (and `pool` on the types a worker "
        "runs). Each type's table lists all of its fields.\n\n",
        "| Type | What it does |\n|---|---|\n",
    ]
    kinds = list(all_kinds())
    for kind in kinds:
        out.append(f"| [`{kind.name}`](#{_anchor(component_name(kind, graph=True))}) | ")
        out.append(_kind_intro(kind).replace("|", "\\|") + " |\n")
    for kind in kinds:
        name = component_name(kind, graph=True)
        out.append(f'\n### {name}\n\n`"type": {as_json(kind.name)}`: {_kind_intro(kind)}\n\n')
        out.append(fields_table(name, schemas[name]))
    out += [
        "\n### NodeBody\n\n",
        "A compensation, or a map's per-item `node`: a node of any type but `map`, "
        "without `id`, `depends_on`, `when`, `trigger_rule` and `compensation`.\n",
        "\n## Retry policy\n\n",
        '<a id="retrypolicy"></a>\n\n',
        "On the definition (for every node) or on a node (replacing it). A node's attempt "
        "that fails with a retryable error is tried again after a wait that grows by "
        "`backoff_coefficient` up to `max_interval_seconds`, until `max_attempts`.\n\n",
        fields_table("RetryPolicy", schemas["RetryPolicy"]),
        "\n## Trigger rules\n\n",
        "A node's `trigger_rule` says when it may run, given how its parents ended: "
        "`succeeded`, `failed` (failed for good, or cancelled) or `skipped`. A rule that "
        "can no longer hold skips the node. After a node failed for good only the rules "
        "meant to run after failures start new nodes.\n\n",
        _listed(TRIGGER_RULE_MEANINGS, TRIGGER_RULES, "trigger rules"),
        "\n## Templates and their context\n\n",
        'A string that is exactly `"{{ expr }}"` becomes the expression\'s JSON value; a '
        "string with `{{ expr }}` inside it is interpolated as text. `expr` is JMESPath; "
        "`when` and a map's `items` are bare JMESPath expressions. They read:\n\n",
        _listed(ROOT_MEANINGS, _in_order(ROOTS, ROOT_MEANINGS), "template roots"),
        "\n## Functions that ship with the engine\n\n",
        "A project registers its own with `@workflow_function` ([Python API](python-api.md)).\n\n",
        _functions(),
    ]
    return "".join(out)
