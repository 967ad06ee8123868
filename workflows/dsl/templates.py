"""`{{ expr }}` templates over JMESPath.

A string that is exactly one `{{ expr }}` becomes the expression's JSON value; a string
with `{{ expr }}` inside other text is interpolated as text. Pure: no Django, no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

import jmespath
from jmespath.exceptions import JMESPathError
from jmespath.parser import ParsedResult

_WHOLE = re.compile(r"\{\{\s*(?P<expr>.+?)\s*\}\}\Z", re.DOTALL)
_INNER = re.compile(r"\{\{\s*(?P<expr>.+?)\s*\}\}", re.DOTALL)
_NODE_REF = re.compile(r"(?<![\w.])nodes\.(?P<id>[A-Za-z_][A-Za-z0-9_]*)")
_ROOT = re.compile(r"\s*(?P<root>[A-Za-z_][A-Za-z0-9_]*)")

#: Roots a template may start from; `item` and `index` exist only inside a map's body.
ROOTS = frozenset({"input", "nodes", "execution", "secrets", "item", "index"})
#: Resolved by the worker at execution time, so their values never reach an event.
DEFERRED_ROOTS = frozenset({"secrets"})


class TemplateError(ValueError):
    def __init__(self, expression: str, message: str):
        self.expression = expression
        super().__init__(f"{{{{ {expression} }}}}: {message}")


@lru_cache(maxsize=4096)
def compile_expression(expression: str) -> ParsedResult:
    try:
        return jmespath.compile(expression)
    except JMESPathError as exc:
        raise TemplateError(expression, f"not a valid JMESPath expression ({exc})") from None


def search(expression: str, context: Mapping[str, Any]) -> Any:
    try:
        return compile_expression(expression).search(context)
    except JMESPathError as exc:
        raise TemplateError(expression, f"could not be evaluated ({exc})") from None


def root_of(expression: str) -> str | None:
    match = _ROOT.match(expression)
    return match.group("root") if match else None


def referenced_nodes(expression: str) -> set[str]:
    return {match.group("id") for match in _NODE_REF.finditer(expression)}


def expressions(value: Any) -> Iterator[str]:
    """Every `{{ expr }}` expression inside a JSON value, in document order."""
    if isinstance(value, str):
        for match in _INNER.finditer(value):
            yield match.group("expr")
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from expressions(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from expressions(item)


def _deferred(expression: str, defer: frozenset[str]) -> bool:
    return root_of(expression) in defer


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def render(
    value: Any, context: Mapping[str, Any], *, defer: frozenset[str] = DEFERRED_ROOTS
) -> Any:
    """Resolve every template in a JSON value; expressions whose root is in `defer` stay."""
    if isinstance(value, str):
        whole = _WHOLE.match(value)
        if whole and value.startswith("{{"):
            expression = whole.group("expr")
            if "{{" not in expression:
                if _deferred(expression, defer):
                    return value
                return search(expression, context)

        def substitute(match: re.Match[str]) -> str:
            expression = match.group("expr")
            if _deferred(expression, defer):
                return match.group(0)
            return _as_text(search(expression, context))

        return _INNER.sub(substitute, value)
    if isinstance(value, Mapping):
        return {key: render(item, context, defer=defer) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [render(item, context, defer=defer) for item in value]
    return value
