"""A workflow's `"concurrency": {"key": "<template over input>", "limit": N}`: at most N
executions of the workflow with the same rendered key run at once (the others wait,
pending, and start first-in first-out: executions/services/admission.py).

The key is rendered once, when the execution is created, from its input alone: there is
no node output yet, and the orchestrator never sees secrets. Pure Python: no Django.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from workflows.dsl.checks import Collector, Scope, describe
from workflows.dsl.references import check_templates, roots_and_nodes
from workflows.dsl.templates import TemplateError, compile_expression, expressions, render

FIELDS = ("key", "limit")
#: Execution.concurrency_key's column width.
MAX_KEY_LENGTH = 255
_EXAMPLE = '{"key": "{{ input.customer_id }}", "limit": 2}'


@dataclass(frozen=True)
class ConcurrencySpec:
    """At most `limit` executions of the workflow per rendered `key` run at once."""

    #: A template over {"input": ...}; a constant string puts every execution in one queue.
    key: str
    limit: int


def parse_concurrency(c: Collector, raw: object) -> ConcurrencySpec | None:
    """The definition's `concurrency`, or None with its problems recorded in `c`."""
    top = c.mapping(raw, node=None, field="concurrency", what=f"an object like {_EXAMPLE}")
    if top is None:
        return None
    c.unknown_keys(top, FIELDS, node=None, prefix="concurrency.", what="concurrency")
    before = len(c.problems)
    key = c.string(
        top.get("key"),
        node=None,
        field="concurrency.key",
        what='a template over the input, e.g. "{{ input.customer_id }}"',
    )
    if key is not None:
        _check_key(c, key)
    limit = c.integer(top.get("limit"), node=None, field="concurrency.limit", minimum=1)
    if key is None or limit is None or len(c.problems) > before:
        return None
    return ConcurrencySpec(key=key, limit=limit)


def _check_key(c: Collector, key: str) -> None:
    scope = Scope(node=None, owner=None, secrets_ok=False)
    before = len(c.problems)
    check_templates(c, key, scope=scope, field="concurrency.key")
    if len(c.problems) > before:
        return
    for expression in expressions(key):
        roots, _ = roots_and_nodes(compile_expression(expression).parsed)
        if roots - {"input"}:
            c.add(
                f"{{{{ {expression} }}}}: the key is rendered when the execution is "
                "created, from its input only: use input.<field>",
                node=None,
                field="concurrency.key",
            )


def key_text(template: str, context: dict[str, Any], *, field: str, after: str = "") -> str:
    """A key template rendered to text (a number or boolean as its JSON). ValueError
    naming `field` and the template when it fails or renders no text (`after` follows
    what it rendered in that message)."""
    try:
        value = render(template, context)
    except TemplateError as exc:
        raise ValueError(f"{field} {template!r}: {exc}") from None
    if isinstance(value, bool | int | float):
        value = json.dumps(value)
    if not isinstance(value, str) or not value:
        got = "an empty string" if value == "" else describe(value)
        raise ValueError(
            f"{field} {template!r} rendered {got}{after}; it must render a non-empty string "
            "or number"
        )
    return value


class ConcurrencyKeyError(ValueError):
    """The key template failed for this input, or rendered to no usable key."""


def render_key(spec: ConcurrencySpec, input: Any) -> str:
    """The key's value for this input: a string, a number or a boolean, as text.
    ConcurrencyKeyError names the template and what went wrong."""
    try:
        value = key_text(
            spec.key, {"input": input}, field="concurrency.key", after=" for this input"
        )
    except ValueError as exc:
        hint = "" if "rendered" not in str(exc) else " (does the input have the field it reads?)"
        raise ConcurrencyKeyError(f"{exc}{hint}") from None
    if len(value) > MAX_KEY_LENGTH:
        raise ConcurrencyKeyError(
            f"concurrency.key {spec.key!r} rendered {len(value)} characters for this input; "
            f"at most {MAX_KEY_LENGTH}"
        )
    return value
