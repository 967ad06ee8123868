"""Secrets: resolved on the worker by name, and scrubbed from whatever a worker records.

`{{ secrets.NAME }}`, alone in its braces, is the only way to reach a secret (the parser
refuses every other expression that could: workflows/dsl/references.py). The recorded
input keeps the template; the worker renders the definition's own template again, with
each `{{ secrets.NAME }}` looked up directly in WORKFLOW_SECRETS and never through
JMESPath: no context ever holds the secrets, so no expression can list or dump them.
Values that came from data (inputs, outputs) are never rendered a second time, so a user
cannot smuggle `{{ secrets.X }}` in through input.

`redact` replaces every configured secret value, wherever it appears in a value, with
`***`; the attempt service applies it to everything a worker records, and the log-record
factory installed below applies it to every log line of the process.
"""

from __future__ import annotations

import json
import logging
import re
import secrets as random
from collections.abc import Mapping
from functools import lru_cache
from typing import Any
from urllib.parse import quote, quote_plus

from nodes.errors import NodeError
from workflows.conf import engine_settings
from workflows.dsl import Node
from workflows.dsl.references import SECRET
from workflows.dsl.templates import TemplateError, expressions, render, root_of
from workflows.kinds import get_kind

MASK = "***"
_INNER = re.compile(r"\{\{\s*(?P<expr>.+?)\s*\}\}", re.DOTALL)


def template_of(node: Node) -> Any:
    """What the node renders: its kind says (workflows/kinds/; an http node's request)."""
    kind = get_kind(node.type)
    return kind.template(node) if kind is not None else node.input


def secret_names(template: Any) -> list[str]:
    """The secrets a template reads, in order of first use."""
    names = (SECRET.match(e.strip()) for e in expressions(template))
    return list(dict.fromkeys(found.group(1) for found in names if found))


def with_secrets(node: Node, recorded_input: Any, context: dict[str, Any] | None) -> Any:
    """The node's payload with its secrets in, for the worker's hands only."""
    template = template_of(node)
    names = secret_names(template)
    if not names:
        return recorded_input
    configured = engine_settings.SECRETS
    missing = [name for name in names if name not in configured]
    if missing:
        # Only the names this node asked for: never a hint of what else is configured.
        raise NodeError(
            f"secret {', '.join(missing)} is not configured: set WORKFLOW_SECRET_"
            f"{missing[0]} in the worker's environment",
            type="MissingSecret",
            retryable=False,
        )
    # Each `{{ secrets.NAME }}` becomes a one-time placeholder that no data can contain,
    # the rest renders over a context without secrets, then placeholders become values.
    nonce = random.token_hex(16)
    placeholders = {f"\x00{nonce}:{name}\x00": configured[name] for name in names}
    try:
        rendered = render(_with_placeholders(template, nonce), context or {}, defer=frozenset())
    except TemplateError as exc:
        raise NodeError(str(exc), type="TemplateError", retryable=False) from None
    return _replace(rendered, placeholders)


def _with_placeholders(value: Any, nonce: str) -> Any:
    if isinstance(value, str):

        def swap(match: re.Match[str]) -> str:
            expression = match.group("expr").strip()
            if found := SECRET.match(expression):
                return f"\x00{nonce}:{found.group(1)}\x00"
            if root_of(expression) == "secrets":  # a version stored before the rule
                raise NodeError(
                    f"{{{{ {expression} }}}}: only {{{{ secrets.NAME }}}} may read a secret",
                    type="TemplateError",
                    retryable=False,
                )
            return match.group(0)

        return _INNER.sub(swap, value)
    if isinstance(value, Mapping):
        return {key: _with_placeholders(item, nonce) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_with_placeholders(item, nonce) for item in value]
    return value


def _replace(value: Any, mapping: Mapping[str, str]) -> Any:
    """`value` with every key of `mapping` replaced by its value, in strings and keys."""
    if isinstance(value, str):
        for old, new in mapping.items():
            if old in value:
                value = value.replace(old, new)
        return value
    if isinstance(value, Mapping):
        return {_replace(key, mapping): _replace(item, mapping) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_replace(item, mapping) for item in value]
    return value


@lru_cache(maxsize=8)
def _masks(values: tuple[str, ...]) -> dict[str, str]:
    """Each secret value and the encodings it shows up in (a URL's %-escapes, a JSON
    string's escapes), longest first, so that no part of a longer one is left behind."""
    forms: set[str] = set()
    for value in values:
        if value:
            forms |= {value, quote(value, safe=""), quote(value), quote_plus(value)}
            forms.add(json.dumps(value)[1:-1])
            forms.add(json.dumps(value, ensure_ascii=False)[1:-1])
    return {form: MASK for form in sorted(forms, key=len, reverse=True) if form}


def masks() -> dict[str, str]:
    return _masks(tuple(sorted(set(engine_settings.SECRETS.values()))))


def redact(value: Any) -> Any:
    """`value` with every configured secret value replaced by `***` (strings and keys)."""
    found = masks()
    return _replace(value, found) if found else value


class _RedactingRecord(logging.LogRecord):
    """A log record whose message and traceback never carry a secret value."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        try:
            found = masks()
        except Exception:  # settings not configured yet: nothing to hide yet
            return
        if not found:
            return
        try:
            message = self.getMessage()
        except Exception:  # a bad format: logging reports it when a handler formats
            return
        self.msg, self.args = _replace(message, found), ()
        if self.exc_info and self.exc_info[0] is not None:
            text = logging.Formatter().formatException(self.exc_info)
            self.exc_text = _replace(text, found)


def install_log_redaction() -> None:
    """Every log record created from now on, in any logger of this process, is redacted
    before any handler formats it (Celery's task failure lines and httpx's request lines
    include URLs and exception texts)."""
    if logging.getLogRecordFactory() is not _RedactingRecord:
        logging.setLogRecordFactory(_RedactingRecord)


# Imported by the node task, so every worker process redacts its logs from the start.
install_log_redaction()
