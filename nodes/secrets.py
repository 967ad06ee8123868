"""`{{ secrets.NAME }}` is resolved here, on the worker, and never written to an event.

The recorded input keeps the template; the worker renders the definition's own template
again with secrets in the context. Values that came from data (inputs, outputs) are never
rendered a second time, so a user cannot smuggle `{{ secrets.X }}` in through input.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from nodes.errors import NodeError
from workflows.dsl import Node
from workflows.dsl.templates import TemplateError, expressions, render, root_of


def template_of(node: Node) -> Any:
    return node.request if node.type == "http" else node.input


def secret_names(template: Any) -> list[str]:
    return [e.split(".", 1)[1].strip() for e in expressions(template) if root_of(e) == "secrets"]


def with_secrets(node: Node, recorded_input: Any, context: dict[str, Any] | None) -> Any:
    template = template_of(node)
    names = secret_names(template)
    if not names:
        return recorded_input
    missing = sorted(n for n in names if n not in settings.WORKFLOW_SECRETS)
    if missing:
        raise NodeError(
            f"secret(s) {', '.join(missing)} not configured: set WORKFLOW_SECRET_<NAME> "
            "in the worker's environment",
            type="MissingSecret",
            retryable=False,
        )
    full = {**(context or {}), "secrets": dict(settings.WORKFLOW_SECRETS)}
    try:
        return render(template, full, defer=frozenset())
    except TemplateError as exc:
        raise NodeError(str(exc), type="TemplateError", retryable=False) from None
