"""The node-kind registry (workflows/kinds/): the one list of node types, and a new kind
added from outside, parsed and run through decide, without touching any other module."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from importlib import import_module
from typing import Any

import pytest

from executions.engine.events import EventType
from executions.engine.nodes import WORKER_TYPES
from executions.engine.statuses import ExecutionStatus, TaskStatus
from executions.engine.verify import verify
from tests.unit.engine.sim import Run
from workflows.dsl import NODE_TYPES, DefinitionError, parse_definition
from workflows.dsl.bodies import TYPE_FIELDS
from workflows.dsl.checks import Collector
from workflows.dsl.model import NodeBody, RetryPolicy
from workflows.dsl.place import Place
from workflows.kinds import all_kinds, get_kind, register, unregister
from workflows.kinds.base import Complete, NodeKind

BUILTIN = ("function", "http", "delay", "approval", "workflow", "map", "signal")


class NoopKind(NodeKind):
    """Completes at once in the orchestrator, with its optional `note` as output."""

    name = "noop"
    fields = ("note",)

    def parse(
        self, c: Collector, raw: Mapping[str, Any], place: Place, policy: RetryPolicy
    ) -> str | None:
        note = raw.get("note")
        if note is not None and not isinstance(note, str):
            c.add("must be a string", node=place.scope.node, field=place.prefix + "note")
        return note

    def start(self, node: NodeBody, context: dict[str, Any], now: datetime | None) -> Complete:
        return Complete({"note": node.spec})


@pytest.fixture
def noop() -> Iterator[NodeKind]:
    kind = register(NoopKind())
    yield kind
    unregister("noop")


DEFINITION = {
    "nodes": [
        {"id": "first", "type": "noop", "note": "hello"},
        {
            "id": "echo",
            "type": "function",
            "function": "std.echo",
            "depends_on": ["first"],
            "input": {"got": "{{ nodes.first.output.note }}"},
        },
    ],
}


def test_the_type_lists_are_derived_from_the_registry() -> None:
    assert tuple(NODE_TYPES) == BUILTIN == tuple(k.name for k in all_kinds())
    assert set(WORKER_TYPES) == {"function", "http", "workflow"}
    assert {name: TYPE_FIELDS[name] for name in BUILTIN} == {k.name: k.fields for k in all_kinds()}


def test_every_worker_kind_names_an_importable_executor() -> None:
    for kind in all_kinds():
        if kind.executor is not None:
            assert kind.runs_on_worker, kind.name
            module, _, name = kind.executor.partition(":")
            assert callable(getattr(import_module(module), name)), kind.executor


def test_a_registered_kind_is_parsed_and_run_through_decide(noop: NodeKind) -> None:
    assert "noop" in NODE_TYPES
    assert TYPE_FIELDS["noop"] == ("note",)
    assert "noop" not in WORKER_TYPES
    definition = parse_definition(DEFINITION)
    assert definition.by_id["first"].spec == "hello"

    run = Run(definition)
    state = run.run_to_end({})
    # The first decide call: the noop completes in the orchestrator and its child is
    # scheduled in the same call.
    first_call = [(e.type, e.node_id) for e in run.log[:3]]
    assert first_call == [
        (EventType.WORKFLOW_STARTED, None),
        (EventType.TASK_COMPLETED, "first"),
        (EventType.TASK_SCHEDULED, "echo"),
    ]
    assert run.log[2].data == {"input": {"got": "hello"}, "type": "function"}
    assert [e.type for e in run.log].count(EventType.WORKFLOW_STARTED) == 1
    assert state.status == ExecutionStatus.SUCCEEDED
    assert state.nodes["first"].status == TaskStatus.SUCCEEDED
    assert state.nodes["first"].output == {"note": "hello"}
    assert verify(definition, run.log, execution_id=run.execution_id) is None


def test_a_registered_kinds_fields_are_checked_and_owned(noop: NodeKind) -> None:
    bad = {"nodes": [{"id": "first", "type": "noop", "note": 3}]}
    with pytest.raises(DefinitionError, match="must be a string"):
        parse_definition(bad)
    stray = {"nodes": [{"id": "f", "type": "function", "function": "std.echo", "note": "x"}]}
    with pytest.raises(DefinitionError, match="'note' belongs to noop nodes, not to a function"):
        parse_definition(stray)


def test_an_unregistered_kind_is_unknown_again() -> None:
    register(NoopKind())
    unregister("noop")
    assert get_kind("noop") is None
    assert "noop" not in NODE_TYPES
    with pytest.raises(DefinitionError, match="unknown type 'noop'"):
        parse_definition(DEFINITION)


def test_a_taken_name_is_refused(noop: NodeKind) -> None:
    class Other(NoopKind):
        pass

    with pytest.raises(ValueError, match="already registered"):
        register(Other())
    assert get_kind("noop") is noop
