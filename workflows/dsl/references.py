"""Checks of `{{ expr }}` templates and bare expressions inside a definition.

An expression must compile, start from a known root, and read only nodes that exist;
whether those nodes are upstream is checked later, once the graph is known.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from workflows.dsl.checks import Collector, NodeRef, Scope
from workflows.dsl.templates import (
    ROOTS,
    TemplateError,
    compile_expression,
    expressions,
    referenced_nodes,
)

_MAP_ROOTS = frozenset({"item", "index"})
_SECRET = re.compile(r"secrets\.[A-Za-z_][A-Za-z0-9_]*\Z")
_WHOLE = re.compile(r"\s*\{\{\s*(?P<expr>.+?)\s*\}\}\s*\Z", re.DOTALL)

#: AST node types whose every child is evaluated against the same context as the node.
_SAME_CONTEXT = frozenset(
    {
        "function_expression",
        "comparator",
        "and_expression",
        "or_expression",
        "not_expression",
        "multi_select_list",
        "multi_select_dict",
        "key_val_pair",
    }
)
#: AST node types whose first child is evaluated against the context, the rest against
#: its result (projections, pipes, indexing).
_LEFT_ONLY = frozenset(
    {
        "subexpression",
        "index_expression",
        "projection",
        "value_projection",
        "filter_projection",
        "flatten",
        "pipe",
    }
)


def _leading_field(ast: Mapping[str, Any]) -> str | None:
    if ast.get("type") == "field":
        return ast.get("value")
    children = ast.get("children") or []
    if ast.get("type") in _LEFT_ONLY and children and isinstance(children[0], Mapping):
        return _leading_field(children[0])
    return None


def roots_and_nodes(ast: Mapping[str, Any]) -> tuple[set[str], set[str]]:
    """The context keys an expression reads from the root, and the `nodes.<id>` it reads."""
    roots: set[str] = set()
    nodes: set[str] = set()
    stack = [ast]
    while stack:
        current = stack.pop()
        kind = current.get("type")
        children = [c for c in current.get("children") or [] if isinstance(c, Mapping)]
        if kind == "field":
            roots.add(current["value"])
        elif kind in _SAME_CONTEXT:
            stack.extend(children)
        elif kind in _LEFT_ONLY and children:
            first = children[0]
            stack.append(first)
            reads_nodes = first.get("type") == "field" and first.get("value") == "nodes"
            if kind == "subexpression" and reads_nodes and len(children) > 1:
                node_id = _leading_field(children[1])
                if node_id:
                    nodes.add(node_id)
    return roots, nodes


def check_expression(
    c: Collector, expression: str, *, scope: Scope, field: str, bare: bool = False
) -> None:
    """Compile one expression and check what it reads; `bare` is for `when`/`items`."""
    short = expression if len(expression) <= 60 else expression[:60] + "..."
    shown = repr(short) if bare else f"{{{{ {short} }}}}"
    try:
        ast = compile_expression(expression).parsed
    except TemplateError as exc:
        reason = " ".join(str(exc).split(": ", 1)[-1].split())
        c.add(
            f"invalid expression {shown}: {reason}",
            node=scope.node,
            field=field,
        )
        return
    except Exception as exc:  # the third-party JMESPath parser on untrusted text
        c.add(f"invalid expression {shown}: {exc}", node=scope.node, field=field)
        return
    roots, nodes = roots_and_nodes(ast)
    for root in sorted(roots):
        _check_root(c, root, expression, shown, scope=scope, field=field)
    for node_id in sorted(nodes | referenced_nodes(expression)):
        c.refs.append(NodeRef(scope=scope, field=field, node_id=node_id))


def _check_root(
    c: Collector, root: str, expression: str, shown: str, *, scope: Scope, field: str
) -> None:
    def add(message: str) -> None:
        c.add(f"{shown}: {message}", node=scope.node, field=field)

    if root in _MAP_ROOTS and not scope.in_map:
        add(f"'{root}' exists only inside a map's node body")
    elif root == "secrets" and not scope.secrets_ok:
        add("secrets are resolved by workers, so only a node's input and request may use them")
    elif root == "secrets" and not _SECRET.match(expression.strip()):
        add("use a secret on its own, as {{ secrets.NAME }}")
    elif root not in ROOTS:
        usable = sorted(ROOTS - (set() if scope.in_map else _MAP_ROOTS))
        if not scope.secrets_ok:
            usable.remove("secrets")
        add(
            f"unknown root '{root}'; expressions start from one of {', '.join(usable)} "
            "(e.g. input.user_id or nodes.<id>.output)"
        )


def check_templates(c: Collector, value: object, *, scope: Scope, field: str) -> None:
    """Check every `{{ expr }}` anywhere inside a JSON value (and that it is plain JSON)."""
    for path, text in c.json_strings(value, node=scope.node, field=field):
        for expression in expressions(text):
            check_expression(c, expression, scope=scope, field=path)


def check_bare(
    c: Collector, value: object, *, scope: Scope, field: str, example: str
) -> str | None:
    """A bare JMESPath expression such as `when`; returns it, or None if invalid."""
    text = c.string(value, node=scope.node, field=field, what=f"an expression such as {example}")
    if text is None:
        return None
    if "{{" in text:
        c.add(
            f"is a bare expression: write {example}, without {{{{ }}}}",
            node=scope.node,
            field=field,
        )
        return None
    before = len(c.problems)
    check_expression(c, text.strip(), scope=scope, field=field, bare=True)
    return text.strip() if len(c.problems) == before else None


def check_items(c: Collector, value: object, *, scope: Scope, field: str) -> str | None:
    """A map's `items`: a bare expression or exactly one `{{ expr }}`, returned bare."""
    if isinstance(value, str) and (whole := _WHOLE.match(value)):
        value = whole.group("expr")
    if isinstance(value, str) and "{{" in value:
        c.add(
            "must be one expression that yields a list, e.g. input.items or {{ input.items }}",
            node=scope.node,
            field=field,
        )
        return None
    return check_bare(c, value, scope=scope, field=field, example="input.items")
