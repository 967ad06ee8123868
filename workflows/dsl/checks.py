"""The parser's building blocks: the problem collector and field-level checks.

Every check records a Problem and returns None instead of raising, so one pass over a
definition reports everything wrong with it. Pure Python: no Django.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from workflows.dsl.limits import limits, over, under
from workflows.dsl.problems import Problem

N = TypeVar("N", int, float)

#: JSON values nested deeper than this are refused: they serve no workflow and would hit
#: the recursion limits of the JSON encoders that store and render them.
MAX_DEPTH = 64
#: Durations above ten years overflow nothing, but are surely a unit mistake.
MAX_SECONDS = 10 * 366 * 24 * 3600
#: Integers end up in database integer columns and queries; stay inside 32 bits.
MAX_INT = 2**31 - 1

_TYPE_NAMES: tuple[tuple[type, str], ...] = (
    (bool, "a boolean"),
    (int, "an integer"),
    (float, "a number"),
    (str, "a string"),
    (list, "a list"),
    (dict, "an object"),
)


def describe(value: object) -> str:
    """The JSON kind of a value, for "(got ...)" in messages."""
    if value is None:
        return "null"
    if isinstance(value, float) and not math.isfinite(value):
        return "a non-finite number"
    for kind, name in _TYPE_NAMES:
        if isinstance(value, kind):
            return name
    return type(value).__name__


def quote(text: str, limit: int = 40) -> str:
    """A user-supplied string, shortened so that messages stay readable."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def is_number(value: object) -> bool:
    """A finite JSON number; booleans are not numbers."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class Scope:
    """Where an expression lives, which decides what it may reference."""

    #: The node label problems are reported under (None: the definition itself).
    node: str | None
    #: Templates may read the outputs of this node's upstream nodes; None: of any node.
    owner: str | None
    #: Inside a map's per-item body, where `item` and `index` exist.
    in_map: bool = False
    #: A compensation may read the output of the node it undoes.
    self_ok: bool = False
    #: Secrets are resolved by workers only; the orchestrator never sees them.
    secrets_ok: bool = True


def no_secrets(scope: Scope) -> Scope:
    """Fields the orchestrator evaluates itself, where secrets are not available."""
    return dataclasses.replace(scope, secrets_ok=False)


@dataclass(frozen=True)
class NodeRef:
    """A `nodes.<id>` reference, checked once the whole graph is known."""

    scope: Scope
    field: str
    node_id: str


class Collector:
    """Problems found so far, plus node references awaiting the graph."""

    def __init__(
        self, function_exists: Callable[[str], bool] | None = None, *, limited: bool = True
    ) -> None:
        self.problems: list[Problem] = []
        self.refs: list[NodeRef] = []
        self.function_exists = function_exists
        #: Apply today's WORKFLOW_... bounds (limits.py). False for a stored version,
        #: accepted under the bounds of its day: lowering a setting must not break it.
        self.limited = limited

    def within(
        self, value: N | None, name: str, *, node: str | None, field: str, least: bool = False
    ) -> N | None:
        """`value` if it respects the bound `name` of limits.py (a maximum, or a minimum
        with `least`), else None with a problem naming the setting."""
        if value is None or not self.limited:
            return value
        bound = getattr(limits(), name)
        if value < bound if least else value > bound:
            what = field.rsplit(".", 1)[-1]
            message = (under if least else over)(name, what=what, got=value)
            self.add(message, node=node, field=field)
            return None
        return value

    def add(self, message: str, *, node: str | None, field: str | None) -> None:
        self.problems.append(Problem(message=message, node=node, field=field or None))

    def number(
        self,
        value: object,
        *,
        node: str | None,
        field: str,
        minimum: float = 0,
        exclusive: bool = False,
    ) -> float | None:
        """A finite number >= minimum (> minimum if exclusive), at most MAX_SECONDS."""
        bound = f"> {minimum:g}" if exclusive else f">= {minimum:g}"
        if not is_number(value):
            self.add(f"must be a number {bound} (got {describe(value)})", node=node, field=field)
            return None
        assert isinstance(value, int | float)
        too_small = value <= minimum if exclusive else value < minimum
        if too_small:
            self.add(f"must be a number {bound} (got {value:g})", node=node, field=field)
            return None
        if value > MAX_SECONDS:
            self.add(
                f"must be at most {MAX_SECONDS} (ten years; got {value:g}): "
                "durations are in seconds",
                node=node,
                field=field,
            )
            return None
        return float(value)

    def integer(
        self, value: object, *, node: str | None, field: str, minimum: int = 1
    ) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int):
            self.add(
                f"must be an integer >= {minimum} (got {describe(value)})", node=node, field=field
            )
            return None
        if not minimum <= value <= MAX_INT:
            self.add(
                f"must be an integer between {minimum} and {MAX_INT} (got {value})",
                node=node,
                field=field,
            )
            return None
        return value

    def string(self, value: object, *, node: str | None, field: str, what: str) -> str | None:
        """A non-empty string; `what` says what it should be, e.g. "a function name"."""
        if not isinstance(value, str) or not value.strip():
            got = "an empty string" if isinstance(value, str) else describe(value)
            self.add(f"must be {what} (got {got})", node=node, field=field)
            return None
        return value

    def mapping(
        self, value: object, *, node: str | None, field: str, what: str
    ) -> Mapping[str, Any] | None:
        if not isinstance(value, Mapping):
            self.add(f"must be {what} (got {describe(value)})", node=node, field=field)
            return None
        return value

    def unknown_keys(
        self,
        raw: Mapping[str, Any],
        allowed: Collection[str],
        *,
        node: str | None,
        prefix: str,
        what: str,
    ) -> None:
        """Reject keys outside `allowed`, naming each and listing what is accepted."""
        for key in raw:
            if key not in allowed:
                shown = quote(key) if isinstance(key, str) else repr(key)
                self.add(
                    f"unknown field {shown} for {what}; allowed: {', '.join(sorted(allowed))}",
                    node=node,
                    field=f"{prefix}{key}",
                )

    def json_strings(
        self, value: object, *, node: str | None, field: str
    ) -> Iterator[tuple[str, str]]:
        """(path, string) for every string in a JSON value, checking it is plain JSON.

        Iterative, so that no nesting depth can exhaust the interpreter's stack.
        """
        stack: list[tuple[str, object, int]] = [(field, value, 0)]
        while stack:
            path, current, depth = stack.pop()
            if depth > MAX_DEPTH:
                self.add(f"is nested more than {MAX_DEPTH} levels deep", node=node, field=path)
                continue
            if isinstance(current, str):
                yield path, current
            elif isinstance(current, Mapping):
                children: list[tuple[str, object, int]] = []
                for key, item in current.items():
                    if not isinstance(key, str):
                        self.add("object keys must be strings", node=node, field=path)
                        continue
                    children.append((f"{path}.{key}", item, depth + 1))
                stack.extend(reversed(children))
            elif isinstance(current, list | tuple):
                stack.extend(
                    (f"{path}[{i}]", item, depth + 1)
                    for i, item in reversed(list(enumerate(current)))
                )
            elif isinstance(current, float) and not math.isfinite(current):
                self.add("numbers must be finite (no NaN or Infinity)", node=node, field=path)
            elif current is not None and not isinstance(current, bool | int | float):
                self.add(f"must be JSON (got {describe(current)})", node=node, field=path)
