"""The node-kind registry: the one list of node types (the values of a node's `type`).

Each kind is a class in its own module (workflows/kinds/<name>.py) that owns its DSL
fields and their parsing, how a node of that kind starts, whether a worker runs it, the
status `task_scheduled` gives it and its executor. Everything else that used to keep a
list of types (the parser, the definition schema, fold, decide, the worker's dispatch)
asks this registry. Adding a kind: one module, plus its line in `_builtins` below (or
`register()` it, as tests do).

Pure Python: no Django. The built-in kinds are imported on first use, not when this
package is: they import the DSL's building blocks, and the DSL's parser imports this.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence, Set
from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:
    from workflows.kinds.base import NodeKind

_registry: dict[str, NodeKind] = {}


def _builtins() -> tuple[NodeKind, ...]:
    from workflows.kinds import approval, delay, function, http, map, signal, workflow

    return (
        function.KIND,
        http.KIND,
        delay.KIND,
        approval.KIND,
        workflow.KIND,
        map.KIND,
        signal.KIND,
    )


def _kinds() -> dict[str, NodeKind]:
    if not _registry:
        for kind in _builtins():
            _registry[kind.name] = kind
    return _registry


def register(kind: NodeKind) -> NodeKind:
    """Add a kind under its name; a name taken by another kind is refused."""
    kinds = _kinds()
    if kinds.get(kind.name, kind) is not kind:
        raise ValueError(f"node kind '{kind.name}' is already registered")
    kinds[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    _kinds().pop(name, None)


def get_kind(name: object) -> NodeKind | None:
    """The kind registered under `name`; None for anything else (events may name a kind
    this engine no longer has: fold must not break on them)."""
    kinds = _registry or _kinds()  # fold asks on every task_scheduled: no call when loaded
    return kinds.get(name) if isinstance(name, str) else None


def all_kinds() -> tuple[NodeKind, ...]:
    return tuple(_kinds().values())


class _Names(Sequence[str]):
    """The registered type names, in registration order: a live view, so that a kind
    registered later (a plugin, a test) is seen by every module that imported this."""

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return tuple(_kinds())[index]

    def __len__(self) -> int:
        return len(_kinds())

    def __contains__(self, name: object) -> bool:
        return get_kind(name) is not None

    def __repr__(self) -> str:
        return repr(tuple(_kinds()))


class _WorkerNames(Set[str]):
    """The names of the kinds whose attempts run on a worker (a live view)."""

    def _names(self) -> list[str]:
        return [k.name for k in _kinds().values() if k.runs_on_worker]

    def __contains__(self, name: object) -> bool:
        kind = get_kind(name)
        return kind is not None and kind.runs_on_worker

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())


class _Fields(Mapping[str, tuple[str, ...]]):
    """Each registered type's own DSL fields (a live view)."""

    def __getitem__(self, name: str) -> tuple[str, ...]:
        kind = get_kind(name)
        if kind is None:
            raise KeyError(name)
        return kind.fields

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(_kinds()))

    def __len__(self) -> int:
        return len(_kinds())


#: The type names, those a worker runs, and each type's fields: derived, never listed.
NAMES: Sequence[str] = _Names()
WORKER_NAMES: Set[str] = _WorkerNames()
FIELDS: Mapping[str, tuple[str, ...]] = _Fields()
