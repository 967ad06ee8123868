"""`{{ expr }}` templates over JMESPath.

A string that is exactly one `{{ expr }}` becomes the expression's JSON value; a string
with `{{ expr }}` inside other text is interpolated as text. Pure: no Django, no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from jmespath.parser import ParsedResult

from workflows.dsl.bounded import (
    Budget,
    ExpressionFailure,
    compile_bounded,
    evaluate_bounded,
    spending,
)
from workflows.dsl.limits import limits, over

_WHOLE = re.compile(r"\{\{\s*(?P<expr>.+?)\s*\}\}\Z", re.DOTALL)
_INNER = re.compile(r"\{\{\s*(?P<expr>.+?)\s*\}\}", re.DOTALL)
_NODE_REF = re.compile(r"(?<![\w.])nodes\.(?P<id>[A-Za-z_][A-Za-z0-9_]*)")
_ROOT = re.compile(r"\s*(?P<root>[A-Za-z_][A-Za-z0-9_]*)")

#: Roots a template may start from; `item` and `index` exist only inside a map's body.
ROOTS = frozenset({"input", "nodes", "execution", "secrets", "item", "index"})
#: Resolved by the worker at execution time, so their values never reach an event.
DEFERRED_ROOTS = frozenset({"secrets"})


#: Characters of an expression shown in an error message.
SHOWN_CHARS = 80


class TemplateError(ValueError):
    """An expression that cannot be compiled or evaluated, or a rendered value past a
    bound. `expression` is None when the problem is the rendered value as a whole."""

    def __init__(self, expression: str | None, message: str):
        self.expression = expression
        if expression is None:
            super().__init__(message)
            return
        shown = expression if len(expression) <= SHOWN_CHARS else expression[:SHOWN_CHARS] + "..."
        super().__init__(f"{{{{ {shown} }}}}: {message}")


def compile_expression(expression: str) -> ParsedResult:
    """The parse tree, from a cache bounded by the text it holds; TemplateError if the
    expression is too long (WORKFLOW_MAX_EXPRESSION_LENGTH) or invalid."""
    try:
        return compile_bounded(expression)
    except ExpressionFailure as exc:
        raise TemplateError(expression, str(exc)) from None


def search(expression: str, context: Mapping[str, Any], budget: Budget | None = None) -> Any:
    """The expression's value; any failure at all, including running past
    WORKFLOW_MAX_EXPRESSION_WORK, is a TemplateError."""
    try:
        return evaluate_bounded(expression, context, budget)
    except ExpressionFailure as exc:
        raise TemplateError(expression, str(exc)) from None


def check_size(value: Any, *, what: str) -> None:
    """TemplateError unless `value` is JSON of at most WORKFLOW_MAX_RENDERED_BYTES."""
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise TemplateError(
            None, f"{what} holds NaN or Infinity, which JSON cannot store"
        ) from None
    except (TypeError, RecursionError) as exc:
        raise TemplateError(None, f"{what} is not storable JSON ({type(exc).__name__})") from None
    size = len(text.encode())
    if size > limits().max_rendered_bytes:
        raise TemplateError(None, over("max_rendered_bytes", what=what, got=size))


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
    """Resolve every template in a JSON value; expressions whose root is in `defer` stay.

    TemplateError if an expression fails or the result is past WORKFLOW_MAX_RENDERED_BYTES.
    """
    # One budget for the whole value: a thousand templates get no more than one.
    with spending() as budget:
        rendered = _render(value, context, defer=defer, budget=budget)
    check_size(rendered, what="the rendered value")
    return rendered


def _render(
    value: Any, context: Mapping[str, Any], *, defer: frozenset[str], budget: Budget
) -> Any:
    if isinstance(value, str):
        whole = _WHOLE.match(value)
        if whole and value.startswith("{{"):
            expression = whole.group("expr")
            if "{{" not in expression:
                if _deferred(expression, defer):
                    return value
                return search(expression, context, budget)

        def substitute(match: re.Match[str]) -> str:
            expression = match.group("expr")
            if _deferred(expression, defer):
                return match.group(0)
            return _as_text(search(expression, context, budget))

        return _INNER.sub(substitute, value)
    if isinstance(value, Mapping):
        return {
            key: _render(item, context, defer=defer, budget=budget) for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [_render(item, context, defer=defer, budget=budget) for item in value]
    return value
