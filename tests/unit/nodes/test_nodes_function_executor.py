import math

import pytest

from nodes.context import NodeContext
from nodes.errors import NodeCancelled, NodeError
from nodes.executors.function import run_function
from nodes.registry import register, unregister


@pytest.fixture
def ctx():
    return NodeContext("exec", "node", 1)


@pytest.fixture
def define():
    names: list[str] = []

    def _define(name, fn):
        register(name, fn)
        names.append(name)

    yield _define
    for name in names:
        unregister(name)


def test_calls_the_function_with_input_and_context(ctx, define):
    seen = {}

    def fn(input, context):
        seen["ctx"] = context
        return {"got": input, "key": context.idempotency_key}

    define("tests.fx.ok", fn)
    assert run_function("tests.fx.ok", {"a": 1}, ctx) == {"got": {"a": 1}, "key": "exec:node"}
    assert seen["ctx"] is ctx


def test_output_is_normalized_through_json(ctx, define):
    define("tests.fx.tuple", lambda input, c: {"t": (1, 2), 3: "x"})
    assert run_function("tests.fx.tuple", None, ctx) == {"t": [1, 2], "3": "x"}


def test_unknown_function_is_not_retryable(ctx):
    with pytest.raises(NodeError) as info:
        run_function("tests.fx.missing", None, ctx)
    assert info.value.type == "UnknownFunction"
    assert info.value.retryable is False


def test_node_error_propagates_unchanged(ctx, define):
    error = NodeError("declined", type="CardDeclined", retryable=False)

    def fn(input, c):
        raise error

    define("tests.fx.node_error", fn)
    with pytest.raises(NodeError) as info:
        run_function("tests.fx.node_error", None, ctx)
    assert info.value is error


def test_node_cancelled_propagates(ctx, define):
    def fn(input, c):
        raise NodeCancelled()

    define("tests.fx.cancelled", fn)
    with pytest.raises(NodeCancelled):
        run_function("tests.fx.cancelled", None, ctx)


def test_other_exceptions_become_retryable_node_errors(ctx, define):
    def inner():
        raise ValueError("bad value")

    def fn(input, c):
        inner()

    define("tests.fx.crash", fn)
    with pytest.raises(NodeError) as info:
        run_function("tests.fx.crash", None, ctx)
    error = info.value
    assert (error.type, error.message, error.retryable) == ("ValueError", "bad value", True)
    traceback = error.details["traceback"]
    assert "ValueError: bad value" in traceback
    assert "inner" in traceback
    assert len(traceback.splitlines()) <= 20
    assert isinstance(error.__cause__, ValueError)


@pytest.mark.parametrize("output", [{1, 2}, {"x": object()}, math.nan, {"inf": math.inf}])
def test_non_json_output_is_not_retryable(ctx, define, output):
    define("tests.fx.bad_output", lambda input, c: output)
    with pytest.raises(NodeError) as info:
        run_function("tests.fx.bad_output", None, ctx)
    assert info.value.type == "OutputNotJSON"
    assert info.value.retryable is False
