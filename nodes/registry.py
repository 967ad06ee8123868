"""The registry of workflow functions: ``fn(input, ctx) -> JSON output``.

Projects register functions with :func:`workflow_function`. At start-up (nodes/apps.py)
``nodes.std``, every installed app's ``workflow_functions`` module and the modules listed in
``WORKFLOW_FUNCTION_MODULES`` are imported so that their decorators run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar, overload

WorkflowFunction = Callable[[Any, Any], Any]
F = TypeVar("F", bound=WorkflowFunction)

_registry: dict[str, WorkflowFunction] = {}
#: Names registered with transactional=True: run inside a transaction on the engine's
#: database that also records their result (executions/worker/transactional.py).
_transactional: set[str] = set()
_lock = threading.Lock()


class DuplicateFunctionError(ValueError):
    """A name is already registered to a different function."""


def _same_function(a: WorkflowFunction, b: WorkflowFunction) -> bool:
    # A reloaded module defines a new object for the same function: treat it as the same.
    if a is b:
        return True
    return (getattr(a, "__module__", None), getattr(a, "__qualname__", None)) == (
        getattr(b, "__module__", None),
        getattr(b, "__qualname__", None),
    )


def _check(name: str, fn: WorkflowFunction) -> None:
    if not isinstance(name, str) or not name.strip() or name != name.strip():
        raise ValueError(f"invalid workflow function name: {name!r}")
    if not callable(fn):
        raise TypeError(f"workflow function {name!r} is not callable")


def register(name: str, fn: WorkflowFunction, *, transactional: bool = False) -> None:
    """Register ``fn`` under ``name``; re-registering the same function is a no-op."""
    _check(name, fn)
    with _lock:
        existing = _registry.get(name)
        if existing is not None and not _same_function(existing, fn):
            raise DuplicateFunctionError(
                f"workflow function {name!r} is already registered to "
                f"{existing.__module__}.{existing.__qualname__}"
            )
        _registry[name] = fn
        if transactional:
            _transactional.add(name)
        else:
            _transactional.discard(name)


def unregister(name: str) -> None:
    """Remove ``name`` from the registry, if present (for tests)."""
    with _lock:
        _registry.pop(name, None)
        _transactional.discard(name)


@contextmanager
def standing_in(functions: Mapping[str, WorkflowFunction]) -> Iterator[None]:
    """Inside the block, each name of `functions` calls its stand-in (registered or not
    before); after it, the registry is as it was (for workflows.testing)."""
    for name, fn in functions.items():
        _check(name, fn)
    with _lock:
        before = {name: _registry.get(name) for name in functions}
        _registry.update(functions)
    try:
        yield
    finally:
        with _lock:
            for name, kept in before.items():
                if kept is None:
                    _registry.pop(name, None)
                else:
                    _registry[name] = kept


@overload
def workflow_function(name: F) -> F: ...
@overload
def workflow_function(
    name: str | None = None, *, transactional: bool = False
) -> Callable[[F], F]: ...
def workflow_function(
    name: str | F | None = None, *, transactional: bool = False
) -> F | Callable[[F], F]:
    """Register the decorated ``fn(input, ctx)`` under ``name``.

    The default name is ``"<module>.<qualname>"``. Usable bare (``@workflow_function``)
    or called (``@workflow_function("billing.charge")``).

    ``transactional=True``: the function runs inside one transaction on the engine's
    database, which also records its result; its writes commit if and only if that
    result is recorded. It must be short, make no remote calls, and cannot heartbeat.
    """
    if callable(name):
        fn = name
        register(f"{fn.__module__}.{fn.__qualname__}", fn)
        return fn

    def decorator(fn: F) -> F:
        named = name if name is not None else f"{fn.__module__}.{fn.__qualname__}"
        register(named, fn, transactional=transactional)
        return fn

    return decorator


def get_function(name: str) -> WorkflowFunction:
    """The function registered under ``name``; KeyError if there is none."""
    try:
        return _registry[name]
    except KeyError:
        raise KeyError(f"unknown workflow function: {name!r}") from None


def is_transactional(name: str) -> bool:
    """Whether the function registered under ``name`` runs in the recording transaction."""
    return name in _transactional


def function_exists(name: str) -> bool:
    """Whether a function is registered under ``name``."""
    return name in _registry


def function_names() -> list[str]:
    """Every registered name, sorted."""
    return sorted(_registry)
