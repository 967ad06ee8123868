"""Log lines with the engine's context: JSON lines for machines, or a plain format for people.

Every line carries `execution_id`, `node_id`, `attempt` and `worker` (null where they do not
apply), read from a context variable that the worker runtime and the orchestration paths
bind as they work (`bind`, scoped by `scope`), plus its time (ISO 8601, UTC), level and
logger. WORKFLOW_LOG_FORMAT picks `json` (the default) or `plain` (the demo's).

No Django here: settings.py builds LOGGING from `logging_config`, and Celery's processes
apply the same dictionary (on Celery's setup_logging signal), so workers and beat log as
the web processes do.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from pythonjsonlogger.json import JsonFormatter

#: The fields every line carries, in this order.
FIELDS = ("execution_id", "node_id", "attempt", "worker")
FORMATS = ("json", "plain")

_context: ContextVar[dict[str, Any]] = ContextVar("workflow_log_context", default={})  # noqa: B039


def bind(**fields: Any) -> None:
    """Add `fields` to the context of every line logged from here on, in this task or
    thread, until the enclosing `scope` ends (or `clear`)."""
    _context.set({**_context.get(), **{key: str(value) for key, value in fields.items()}})


def clear() -> None:
    """Forget the context: a new Celery task or HTTP request starts with none."""
    _context.set({})


@contextmanager
def scope(**fields: Any) -> Iterator[None]:
    """`fields` bound inside the block only; whatever the block binds is undone at its end."""
    token = _context.set({**_context.get(), **{k: str(v) for k, v in fields.items()}})
    try:
        yield
    finally:
        _context.reset(token)


def current() -> dict[str, Any]:
    return dict(_context.get())


class ContextFilter(logging.Filter):
    """Puts the context's fields on each record (None where unbound)."""

    def filter(self, record: logging.LogRecord) -> bool:
        context = _context.get()
        for key in FIELDS:
            value = context.get(key)
            setattr(record, key, int(value) if key == "attempt" and value else value)
        return True


class JsonLines(JsonFormatter):
    """One JSON object a line: time, level, logger, message, the context fields, and any
    `extra=` a call passes (exceptions as `exc_info` text)."""

    def __init__(self) -> None:
        super().__init__(
            ["levelname", "name", "message", *FIELDS],
            rename_fields={"levelname": "level", "name": "logger"},
            timestamp="time",
        )

    def add_fields(
        self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]
    ) -> None:
        super().add_fields(log_data, record, message_dict)
        # A traceback is formatted afresh from exc_info by the library; the record's own
        # exc_text is the one with secret values masked (nodes/secrets.py): keep that.
        if record.exc_text and "exc_info" in log_data:
            log_data["exc_info"] = record.exc_text


class Plain(logging.Formatter):
    """`2026-11-30 11:00:00,123 INFO logger [execution node#attempt] message`."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s%(where)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        execution, node = getattr(record, "execution_id", None), getattr(record, "node_id", None)
        where = f" [{execution}" if execution else ""
        if execution and node:
            where += f" {node}#{getattr(record, 'attempt', None) or '?'}"
        record.where = f"{where}]" if where else ""
        return super().format(record)


def logging_config(log_format: str, level: str) -> dict[str, Any]:
    """The LOGGING dictionary: one console handler in `log_format`, the root at `level`."""
    if log_format not in FORMATS:
        known = ", ".join(FORMATS)
        raise ValueError(f"WORKFLOW_LOG_FORMAT must be one of {known}, not {log_format!r}")
    formatter = "workflows.logs.JsonLines" if log_format == "json" else "workflows.logs.Plain"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"context": {"()": "workflows.logs.ContextFilter"}},
        "formatters": {"engine": {"()": formatter}},
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "filters": ["context"],
                "formatter": "engine",
            }
        },
        "root": {"handlers": ["console"], "level": level.upper()},
    }
