"""The definition's JSON Schema, as GET /schema publishes it, says what the DSL parser says
about each node kind: a minimal node of every kind validates and parses; a node missing
any field its kind requires is refused by both; and a table of near misses (another
kind's field, a pool where no worker runs, a map inside a map, json and body at once)
gets the same answer from both. What a schema cannot say (graph, templates, registered
names that exist) stays the parser's alone and is not in the table."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from rest_framework.test import APIClient

from nodes.registry import function_exists
from workflows.dsl import DefinitionError, parse_definition
from workflows.kinds import all_kinds, get_kind

pytestmark = pytest.mark.django_db

FUNCTION = {"type": "function", "function": "std.echo"}
#: The least a node of each kind needs.
MINIMAL: dict[str, dict[str, Any]] = {
    "function": {"function": "std.echo"},
    "http": {"request": {"url": "https://example.com"}},
    "delay": {"seconds": 0},
    "approval": {},
    "workflow": {"workflow": "child"},
    "map": {"items": "input.xs", "node": FUNCTION},
    "signal": {"signal": "paid"},
}


@pytest.fixture(scope="module")
def validator(django_db_blocker) -> jsonschema.protocols.Validator:
    """The Definition component of /schema (OpenAPI 3.0's schema objects are draft 4's
    dialect: exclusiveMinimum is a boolean)."""
    with django_db_blocker.unblock():
        components = APIClient().get("/schema", {"format": "json"}).json()["components"]
    root = {"components": components, **components["schemas"]["Definition"]}
    return jsonschema.Draft4Validator(root)


def _node(kind: str, **fields: Any) -> dict[str, Any]:
    return {"id": "a", "type": kind, **fields}


def _problems(definition: dict[str, Any]) -> list[tuple[str | None, str | None]]:
    """(node, field) of each problem the parser finds; [] when it accepts the definition."""
    try:
        parse_definition(definition, function_exists=function_exists)
    except DefinitionError as exc:
        return [(p.node, p.field) for p in exc.problems]
    return []


def _valid(validator: jsonschema.protocols.Validator, definition: dict[str, Any]) -> bool:
    return validator.is_valid(definition)


def test_every_kind_has_a_minimal_node_here() -> None:
    assert set(MINIMAL) == {kind.name for kind in all_kinds()}


@pytest.mark.parametrize("kind", list(MINIMAL))
def test_a_minimal_node_of_every_kind_validates_and_parses(validator, kind) -> None:
    definition = {"nodes": [_node(kind, **MINIMAL[kind])]}
    assert _problems(definition) == []
    validator.validate(definition)


#: (kind, fields) for what each kind requires: a field, or exactly one of several.
REQUIRED = [(kind.name, r.fields) for kind in all_kinds() for r in kind.requires]


def test_each_kind_requires_what_the_contract_says() -> None:
    assert sorted(REQUIRED) == [
        ("delay", ("seconds", "until")),
        ("function", ("function",)),
        ("http", ("request",)),
        ("map", ("items",)),
        ("map", ("node",)),
        ("signal", ("signal",)),
        ("workflow", ("workflow",)),
    ]


def _without(kind: str, fields: tuple[str, ...]) -> dict[str, Any]:
    return {name: value for name, value in MINIMAL[kind].items() if name not in fields}


@pytest.mark.parametrize(("kind", "fields"), REQUIRED)
def test_a_node_missing_a_required_field_is_refused_by_both(validator, kind, fields) -> None:
    places = [(_node(kind, **_without(kind, fields)), fields[0])]
    kind_of = get_kind(kind)
    if kind_of is not None and not kind_of.fans_out:  # a map is never a compensation
        undo = {"type": kind, **_without(kind, fields)}
        node = _node("function", function="std.echo", compensation=undo)
        places.append((node, f"compensation.{fields[0]}"))
    for node, at in places:
        definition = {"nodes": [node]}
        assert not _valid(validator, definition), definition
        problems = _problems(definition)
        assert ("a", at) in problems, problems


def test_the_api_refuses_each_missing_field_naming_it(api) -> None:
    for kind, fields in REQUIRED:
        definition = {"nodes": [_node(kind, **_without(kind, fields))]}
        body = {"name": f"no-{kind}-{fields[0]}", "definition": definition}
        response = api.post("/workflows", body, format="json")
        assert response.status_code == 400, (kind, fields, response.content[:300])
        errors = [(e["node"], e["field"]) for e in response.json()["errors"]]
        assert ("a", fields[0]) in errors, response.json()


HTTP = {"url": "https://example.com"}
#: (node, whether both take it): near misses on each kind's declaration.
TABLE: list[tuple[dict[str, Any], bool]] = [
    (_node("function", function="std.echo", pool="fast"), True),
    (_node("function", function="std.echo", seconds=1), False),
    (_node("function", function=""), False),
    (_node("function", function=5), False),
    (_node("http", request={**HTTP, "method": "post"}), True),
    (_node("http", request={"url": "{{ input.url }}"}), True),
    (_node("http", request={"url": "ftp://example.com"}), False),
    (_node("http", request={**HTTP, "method": "FETCH"}), False),
    (_node("http", request={**HTTP, "json": {}, "body": "x"}), False),
    (_node("http", request={**HTTP, "body": {}}), False),
    (_node("http", request={**HTTP, "headers": {"X": 1}}), False),
    (_node("http", request={**HTTP, "cookies": {}}), False),
    (_node("http", request=HTTP, success_status=[200, 201]), True),
    (_node("http", request=HTTP, success_status=[]), False),
    (_node("http", request=HTTP, success_status=99), False),
    (_node("delay", until="{{ input.at }}"), True),
    (_node("delay", seconds=1, until="{{ input.at }}"), False),
    (_node("delay", seconds=-1), False),
    (_node("delay", seconds=True), False),
    (_node("delay", seconds=5, pool="fast"), False),
    (_node("delay", until=" "), False),
    (_node("approval", approvers=["group:finance", "user:ada"], on_timeout="approve"), True),
    (_node("approval", approvers=[]), False),
    (_node("approval", approvers=["finance"]), False),
    (_node("approval", on_timeout="later"), False),
    (_node("approval", pool="fast"), False),
    (_node("workflow", workflow="child", version=2), True),
    (_node("workflow", workflow="Child"), False),
    (_node("workflow", workflow="child", version=0), False),
    (_node("workflow", workflow="child", version=2**31), False),
    (_node("map", items="input.xs", node={**FUNCTION, "pool": "fast"}, max_parallel=4), True),
    (_node("map", items="input.xs", node={"type": "map", "items": "x", "node": FUNCTION}), False),
    (_node("map", items="input.xs", node={**FUNCTION, "id": "b"}), False),
    (_node("map", items="input.xs", node=FUNCTION, max_parallel=0), False),
    (_node("map", items="input.xs", node=FUNCTION, pool="fast"), False),
    (_node("map", items=" ", node=FUNCTION), False),
    (_node("signal", signal="order.paid:v1"), True),
    (_node("signal", signal="not a name"), False),
    (_node("signal", signal=""), False),
    (_node("function", function="std.echo", compensation={"type": "delay", "seconds": 1}), True),
    (_node("function", function="std.echo", compensation={"type": "delay"}), False),
    (_node("function", function="std.echo", compensation={"type": "map", **MINIMAL["map"]}), False),
    (_node("function", function="std.echo", compensation={**FUNCTION, "depends_on": []}), False),
    (_node("approval", when="input.ok"), True),
    (_node("approval", when=" "), False),
    (_node("nope"), False),
]


@pytest.mark.parametrize(("node", "accepted"), TABLE, ids=lambda v: str(v)[:60])
def test_the_schema_and_the_parser_agree_on_each_near_miss(validator, node, accepted) -> None:
    definition = {"nodes": [node]}
    assert (_problems(definition) == []) is accepted, _problems(definition)
    assert _valid(validator, definition) is accepted
