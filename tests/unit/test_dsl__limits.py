"""Bounds on definitions (limits.py): each refused at parse with node, field and the
setting that raises it; a stored version is parsed again without today's bounds."""

from __future__ import annotations

from typing import Any

import pytest

from workflows.dsl import DefinitionError, parse_definition
from workflows.dsl.limits import Limits, configure_from, documented, limits, overridden


def fn(node_id: str = "a", **fields: Any) -> dict[str, Any]:
    return {"id": node_id, "type": "function", "function": "std.echo", **fields}


def mapped(**fields: Any) -> dict[str, Any]:
    return {"id": "m", "type": "map", "items": "input.items", "node": fn_body(), **fields}


def fn_body() -> dict[str, Any]:
    return {"type": "function", "function": "std.echo"}


def delay(**fields: Any) -> dict[str, Any]:
    return {"id": "d", "type": "delay", **fields}


# (definition, node, field, setting named in the message)
PAST_A_BOUND: list[Any] = [
    pytest.param(
        {"nodes": [fn(retry_policy={"max_attempts": 101})]},
        "a",
        "retry_policy.max_attempts",
        "WORKFLOW_MAX_ATTEMPTS",
        id="max-attempts",
    ),
    pytest.param(
        {"nodes": [fn()], "retry_policy": {"max_attempts": 2**31 - 1}},
        None,
        "retry_policy.max_attempts",
        "WORKFLOW_MAX_ATTEMPTS",
        id="max-attempts-definition-level",
    ),
    pytest.param(
        {"nodes": [fn(retry_policy={"initial_interval_seconds": 0.001})]},
        "a",
        "retry_policy.initial_interval_seconds",
        "WORKFLOW_MIN_RETRY_INTERVAL_SECONDS",
        id="min-interval",
    ),
    pytest.param(
        {"nodes": [fn(timeout_seconds=31 * 86400)]},
        "a",
        "timeout_seconds",
        "WORKFLOW_MAX_TIMEOUT_SECONDS",
        id="timeout",
    ),
    pytest.param(
        {"nodes": [fn(heartbeat_timeout_seconds=2 * 86400)]},
        "a",
        "heartbeat_timeout_seconds",
        "WORKFLOW_MAX_HEARTBEAT_TIMEOUT_SECONDS",
        id="heartbeat",
    ),
    pytest.param(
        {"nodes": [delay(until="9000-01-01T00:00:00+00:00")]},
        "d",
        "until",
        "WORKFLOW_MAX_DELAY_SECONDS",
        id="until-far",
    ),
    pytest.param(
        {"nodes": [mapped(max_parallel=1001)]},
        "m",
        "max_parallel",
        "WORKFLOW_MAP_MAX_PARALLEL",
        id="max-parallel",
    ),
    pytest.param(
        {"nodes": [fn(f"n{i}") for i in range(1001)]},
        None,
        "nodes",
        "WORKFLOW_MAX_NODES",
        id="nodes",
    ),
    pytest.param(
        {"nodes": [fn(input="x" * (512 * 1024))]},
        None,
        None,
        "WORKFLOW_MAX_DEFINITION_BYTES",
        id="definition-bytes",
    ),
    pytest.param(
        {"nodes": [fn(input="{{ input.a" + " || input.a" * 300 + " }}")]},
        "a",
        "input",
        "WORKFLOW_MAX_EXPRESSION_LENGTH",
        id="expression-length",
    ),
    pytest.param(
        {"nodes": [fn(when="input.a" + " || input.a" * 300)]},
        "a",
        "when",
        "WORKFLOW_MAX_EXPRESSION_LENGTH",
        id="when-length",
    ),
]


@pytest.mark.parametrize(("raw", "node", "field", "setting"), PAST_A_BOUND)
def test_past_a_bound_is_refused_naming_node_field_and_setting(
    raw: dict[str, Any], node: str | None, field: str | None, setting: str
) -> None:
    with pytest.raises(DefinitionError) as info:
        parse_definition(raw)
    here = [p for p in info.value.problems if p.node == node and p.field == field]
    assert here, f"expected a problem at node={node!r} field={field!r}: {info.value.problems}"
    assert any(setting in p.message for p in here), here


@pytest.mark.parametrize(
    "until",
    ["9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+23:59"],
    ids=["past-9999-in-utc", "before-year-1-in-utc"],
)
def test_an_until_outside_the_storable_range_is_refused(until: str) -> None:
    with pytest.raises(DefinitionError) as info:
        parse_definition({"nodes": [delay(until=until)]})
    [problem] = info.value.problems
    assert (problem.node, problem.field) == ("d", "until")
    assert "out of the range" in problem.message


ACCEPTED_AT_THE_BOUND: list[Any] = [
    pytest.param({"nodes": [fn(retry_policy={"max_attempts": 100})]}, id="max-attempts"),
    pytest.param(
        {"nodes": [fn(retry_policy={"initial_interval_seconds": 0.1})]}, id="min-interval"
    ),
    pytest.param({"nodes": [fn(timeout_seconds=30 * 86400)]}, id="timeout"),
    pytest.param({"nodes": [mapped(max_parallel=1000)]}, id="max-parallel"),
    pytest.param({"nodes": [fn(f"n{i}") for i in range(1000)]}, id="nodes"),
    pytest.param({"nodes": [delay(until="2030-01-01T09:00:00Z")]}, id="until-contract-example"),
]


@pytest.mark.parametrize("raw", ACCEPTED_AT_THE_BOUND)
def test_at_the_bound_is_accepted(raw: dict[str, Any]) -> None:
    parse_definition(raw)


@pytest.mark.parametrize("raw", [p.values[0] for p in PAST_A_BOUND if "length" not in p.id])
def test_a_stored_version_is_not_held_to_todays_bounds(raw: dict[str, Any]) -> None:
    """Lowering a setting must not break executions of versions accepted before. (An
    expression's length is checked whenever it is compiled, stored or not.)"""
    parse_definition(raw, stored=True)


def test_a_delay_longer_than_the_setting_is_refused() -> None:
    with overridden(max_delay_seconds=86400):
        with pytest.raises(DefinitionError) as info:
            parse_definition({"nodes": [delay(seconds=86401)]})
        parse_definition({"nodes": [delay(seconds=86400)]})
    [problem] = info.value.problems
    assert (problem.node, problem.field) == ("d", "seconds")
    assert "WORKFLOW_MAX_DELAY_SECONDS" in problem.message


def test_bounds_follow_the_settings() -> None:
    raw = {"nodes": [fn(retry_policy={"max_attempts": 5})]}
    with (
        overridden(max_attempts=4),
        pytest.raises(DefinitionError, match="over the limit of 4 attempts"),
    ):
        parse_definition(raw)
    parse_definition(raw)


def test_configure_from_reads_every_setting_with_its_type() -> None:
    seen: list[str] = []

    def get(name: str, default: Any) -> Any:
        seen.append(name)
        return "7" if name == "WORKFLOW_MAX_ATTEMPTS" else default

    with overridden():
        configured = configure_from(get)
        assert configured.max_attempts == 7
        assert configured.map_max_items == Limits().map_max_items
    assert sorted(seen) == sorted(documented())
    assert limits().max_attempts == 100
    assert all(name.startswith("WORKFLOW_") for name in documented())
