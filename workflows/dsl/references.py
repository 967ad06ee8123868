"""Checks of `{{ expr }}` templates and bare expressions inside a definition.

An expression must compile, start from a known root, and read only nodes that exist;
whether those nodes are upstream is checked later, once the graph is known.

Secrets: `{{ secrets.NAME }}`, alone in its braces, is the only expression that may name
them. Whatever reads the context as a whole (`@`, `*`, `[0]`, `keys(@)`, `@.secrets` ...)
is refused too: it would reach every secret if a context ever held them (the worker's does
not: nodes/secrets.py looks each secret up by name, outside JMESPath).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
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
#: The one form that reaches a secret; the name is group 1.
SECRET = re.compile(r"secrets\.([A-Za-z_][A-Za-z0-9_]*)\Z")
#: What roots_and_nodes reports for an expression that reads the whole context.
WHOLE_CONTEXT = "@"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: AST nodes that stand for the context itself where they are evaluated against it.
_CONTEXT_ITSELF = frozenset({"current", "identity"})
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
    """The context keys an expression reads from the root, and the `nodes.<id>` it reads.

    WHOLE_CONTEXT among the roots: somewhere it reads the context as a whole."""
    roots: set[str] = set()
    nodes: set[str] = set()
    stack = [ast]
    while stack:
        current = stack.pop()
        kind = current.get("type")
        children = [c for c in current.get("children") or [] if isinstance(c, Mapping)]
        if kind == "field":
            roots.add(current["value"])
        elif kind in _CONTEXT_ITSELF:
            roots.add(WHOLE_CONTEXT)
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

    if root == WHOLE_CONTEXT:
        # Stored versions keep parsing (their worker never holds secrets in a context).
        if getattr(c, "limited", True):
            add(
                "reads the whole context (with '@', '*' or an index at the top), which is "
                "refused because it could reach secrets; name what you need, e.g. "
                "input.user_id or nodes.<id>.output"
            )
    elif root in _MAP_ROOTS and not scope.in_map:
        add(f"'{root}' exists only inside a map's node body")
    elif root == "secrets" and not scope.secrets_ok:
        add("secrets are resolved by workers, so only a node's input and request may use them")
    elif root == "secrets" and not SECRET.match(expression.strip()):
        add("use a secret on its own, as {{ secrets.NAME }}: no other expression may read secrets")
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


def _secret_uses(value: object, path: str) -> Iterator[tuple[str, str]]:
    """(field path, secret name) for every `{{ secrets.NAME }}` inside a raw JSON value."""
    if isinstance(value, str):
        for expression in expressions(value):
            if found := SECRET.match(expression.strip()):
                yield path, found.group(1)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _secret_uses(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _secret_uses(item, f"{path}[{index}]")


def check_declared_secrets(c: Collector, top: Mapping[str, Any]) -> None:
    """A definition's optional `"secrets": ["NAME", ...]`: the only secrets it may use."""
    if "secrets" not in top:
        return
    declared = top["secrets"]
    names = declared if isinstance(declared, list) else None
    if names is None or not all(isinstance(n, str) and _NAME.match(n) for n in names):
        c.add(
            'must be a list of secret names such as ["API_TOKEN"] (letters, digits, "_")',
            node=None,
            field="secrets",
        )
        return
    nodes = top.get("nodes")
    for index, raw in enumerate(nodes if isinstance(nodes, list) else []):
        if not isinstance(raw, Mapping):
            continue
        label = raw["id"] if isinstance(raw.get("id"), str) else f"#{index}"
        for path, name in _secret_uses({k: v for k, v in raw.items() if k != "id"}, ""):
            if name not in names:
                c.add(
                    f"{{{{ secrets.{name} }}}} is not among the definition's declared secrets "
                    f'({", ".join(names) or "none"}): declare it in "secrets" or remove it',
                    node=label,
                    field=path,
                )
