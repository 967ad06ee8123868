import subprocess
import sys

import pytest

import nodes
import nodes.std
from nodes.registry import (
    DuplicateFunctionError,
    function_exists,
    function_names,
    get_function,
    is_transactional,
    register,
    unregister,
    workflow_function,
)


@pytest.fixture
def cleanup():
    names: list[str] = []
    yield names
    for name in names:
        unregister(name)


def test_register_with_explicit_name(cleanup):
    cleanup.append("tests.double")

    @workflow_function("tests.double")
    def double(input, ctx):
        return input * 2

    assert function_exists("tests.double")
    assert get_function("tests.double") is double
    assert "tests.double" in function_names()
    assert function_names() == sorted(function_names())


def test_default_name_is_module_and_qualname(cleanup):
    @workflow_function()
    def triple(input, ctx):
        return input * 3

    name = f"{__name__}.test_default_name_is_module_and_qualname.<locals>.triple"
    cleanup.append(name)
    assert get_function(name) is triple


def test_bare_decorator(cleanup):
    @workflow_function
    def bare(input, ctx):
        return None

    name = f"{bare.__module__}.{bare.__qualname__}"
    cleanup.append(name)
    assert get_function(name) is bare


def test_duplicate_name_with_other_function_raises(cleanup):
    cleanup.append("tests.dup")

    @workflow_function("tests.dup")
    def first(input, ctx):
        return 1

    with pytest.raises(DuplicateFunctionError):

        @workflow_function("tests.dup")
        def second(input, ctx):
            return 2

    assert get_function("tests.dup") is first


def test_registering_the_same_function_twice_is_fine(cleanup):
    cleanup.append("tests.same")

    def same(input, ctx):
        return 1

    register("tests.same", same)
    register("tests.same", same)
    assert get_function("tests.same") is same


@pytest.mark.parametrize("name", ["", "  ", " padded"])
def test_invalid_names_are_refused(name):
    with pytest.raises(ValueError, match="invalid workflow function name"):
        register(name, lambda input, ctx: None)


def test_unknown_function():
    assert not function_exists("no.such.function")
    with pytest.raises(KeyError):
        get_function("no.such.function")


def test_shipped_functions_are_registered():
    for name in [
        "std.echo",
        "std.noop",
        "std.sleep",
        "std.fail",
        "demo.verify_account",
        "demo.create_workspace",
        "demo.send_email",
        "demo.create_team",
        "demo.done",
    ]:
        assert function_exists(name), name


def test_package_exports():
    assert nodes.workflow_function is workflow_function
    assert {"NodeContext", "NodeError", "NodeCancelled"} <= set(nodes.__all__)


def test_importing_nodes_does_not_import_django():
    code = (
        "import sys, nodes, nodes.std, nodes.executors.function, "
        "nodes.executors.http\n"
        "assert not [m for m in sys.modules if m.startswith('django')], 'django imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_transactional_is_remembered_per_name(cleanup):
    cleanup.extend(["tests.tx", "tests.plain"])

    @workflow_function("tests.tx", transactional=True)
    def tx(input, ctx):
        return None

    @workflow_function("tests.plain")
    def plain(input, ctx):
        return None

    assert (is_transactional("tests.tx"), is_transactional("tests.plain")) == (True, False)
    assert get_function("tests.tx") is tx
    unregister("tests.tx")
    assert not is_transactional("tests.tx")
    assert not is_transactional("std.echo")
