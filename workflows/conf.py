"""The engine's settings, each with its default: `WORKFLOW_<NAME>` in a project's Django
settings, `engine_settings.<NAME>` in the engine's code, which reads them nowhere else.

A project that sets none of them gets a working engine. Modelled on DRF's `api_settings`:
a value is read when first used, checked (a wrong one is an ImproperlyConfigured naming
its setting), kept, and read again whenever a setting changes (`override_settings`,
pytest-django's `settings` fixture). Each setting also accepts the text of an environment
variable ("2.5", "1", "a,b", "http:http"), which `from_environment` reads for the
standalone project.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed

from workflows.dsl import limits as bounds

PREFIX = "WORKFLOW_"

#: Environment variables `WORKFLOW_SECRET_<NAME>` are the secrets' own (from_environment).
SECRET_PREFIX = "WORKFLOW_SECRET_"

#: Spans exported by the workers where WORKFLOW_OTEL_EXPORTER names one of these.
OTEL_EXPORTERS = ("otlp", "console")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


@dataclass(frozen=True)
class Setting:
    default: Any
    #: The setting's value as the engine uses it; TypeError or ValueError when it is wrong.
    clean: Callable[[Any], Any]
    #: What it means, for the reader of docs/reference/settings.md (generated from here).
    description: str


def _number(kind: type[int] | type[float], minimum: float | None = None) -> Callable[[Any], Any]:
    def clean(value: Any) -> int | float:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise TypeError(f"must be a number, not {value!r}")
        number = kind(value)
        if minimum is not None and number < minimum:
            raise ValueError(f"must be at least {minimum:g}, not {number!r}")
        return number

    return clean


def _optional(clean: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: None if value is None or value == "" else clean(value)


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise TypeError(f"must be True or False, not {value!r}")


def _names(value: Any) -> list[str]:
    """A list of names: a list or tuple of strings, or "a,b,c"."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
        raise TypeError(f"must be a list of strings, not {value!r}")
    return [item.strip() for item in items if item.strip()]


def _node_queues(value: Any) -> dict[str, str]:
    """{node type: queue}, or "type:queue,..." (e.g. "http:http")."""
    if isinstance(value, str):
        pairs = [route.partition(":")[::2] for route in _names(value)]
        if any(not node_type.strip() or not queue.strip() for node_type, queue in pairs):
            raise ValueError(f"{value!r} is not 'node_type:queue,...' (e.g. http:http)")
        value = {node_type.strip(): queue.strip() for node_type, queue in pairs}
    return _strings(value)


def _strings(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and k and isinstance(v, str) and v for k, v in value.items()
    ):
        raise TypeError(f"must map names to non-empty strings, not {value!r}")
    return dict(value)


def _choice(*choices: str) -> Callable[[Any], str]:
    def clean(value: Any) -> str:
        text = value.strip().lower() if isinstance(value, str) else value
        if text not in choices:
            shown = ", ".join(repr(c) for c in choices)
            raise ValueError(f"must be one of {shown}, not {value!r}")
        return str(text)

    return clean


def _path(value: Any) -> Path:
    if not isinstance(value, str | os.PathLike) or not str(value):
        raise TypeError(f"must be a path, not {value!r}")
    return Path(value)


SETTINGS: dict[str, Setting] = {
    # --- Functions, queues, processes ---------------------------------------------------
    "FUNCTION_MODULES": Setting(
        [],
        _names,
        "Modules imported at start-up for their @workflow_function decorators, besides "
        "nodes.std and every installed app's `workflow_functions` module.",
    ),
    "NODE_QUEUES": Setting(
        {},
        _node_queues,
        'Node types with a queue of their own, {type: queue} or "type:queue,...": e.g. '
        '{"http": "http"} runs HTTP nodes on workers started with `-Q http`. The other '
        "types go to the `nodes` queue. Attempts then always travel through their queue: "
        "a worker does not run the execution's next attempt itself (eager dispatch) when "
        "this is set.",
    ),
    "VAR_DIR": Setting(
        Path(tempfile.gettempdir()) / "workflow-engine",
        _path,
        "Where the engine keeps its files (beat's heartbeat, the demo's logs).",
    ),
    "SWEEP_INTERVAL": Setting(
        1.0,
        _number(float, minimum=0.001),
        "Seconds between two sweeps (lease timeouts, timers, lost messages, admission).",
    ),
    "SWEEPER_STALE_SECONDS": Setting(
        None,
        _optional(_number(float, minimum=0)),
        "/healthz and /metrics call the sweeper stale when its last completed sweep is "
        "older (None: ten sweep intervals, at least 30 s).",
    ),
    "DEFAULT_LEASE_SECONDS": Setting(
        30.0,
        _number(float, minimum=0.001),
        "Seconds a claimed attempt may go without a lease renewal when its node sets none.",
    ),
    "REPUBLISH_AFTER_SECONDS": Setting(
        15.0,
        _number(float, minimum=0),
        "A scheduled attempt nobody claimed for this long had its message lost: republish.",
    ),
    "MAX_IN_FLIGHT_PER_EXECUTION": Setting(
        64,
        _number(int, minimum=1),
        "Unclaimed run_task messages one execution may have in the broker at once; "
        "attempts scheduled beyond it are held in the database and published as claims "
        "take the ones out (a finishing worker runs a held one itself, with no message). "
        "64: more than the worker processes a queue usually has, so no idle worker waits "
        "for a top-up, while a 10,000-item map keeps at most 64 messages ahead of other "
        "executions' in the queue.",
    ),
    "MAX_DEPTH": Setting(
        16,
        _number(int, minimum=0),
        "Sub-workflows nest at most this deep (a top-level execution is depth 0); a "
        "`workflow` node that would start a child past it fails with MaxDepthExceeded.",
    ),
    "MAX_RECORDED_BYTES": Setting(
        2 * 1024 * 1024,
        _number(int, minimum=1),
        "Compact JSON bytes of one recorded output or error; past it the node fails with "
        "OutputTooLarge (an error is cut instead). Above "
        "WORKFLOW_HTTP_MAX_RESPONSE_BYTES, so a response the HTTP node keeps still fits "
        "with its headers.",
    ),
    "RETENTION_DAYS": Setting(
        None,
        _optional(_number(float, minimum=0.001)),
        "Days an ended execution is kept before beat's daily purge deletes it with its "
        "rows (leaving a tombstone); None keeps everything. A definition's "
        '"retention_days" wins over it for the executions of that version.',
    ),
    # --- Nodes ---------------------------------------------------------------------------
    "HTTP_ALLOWED_HOSTS": Setting(
        [],
        _names,
        "Hosts HTTP nodes may call although they resolve to private or loopback addresses.",
    ),
    "SECRETS": Setting(
        {},
        _strings,
        "{{ secrets.NAME }}: {NAME: value}, read at execution time and never recorded.",
    ),
    "OTEL_EXPORTER": Setting(
        "",
        _choice("", *OTEL_EXPORTERS),
        '"otlp" or "console": the workers export spans there ("": to the process\'s provider).',
    ),
    "FAULT_INJECTION": Setting(
        False,
        _flag,
        'POST /executions accepts "faults" only where this is on: for testing functions\' '
        "idempotency, never in production.",
    ),
    "FAULT_MAX_DELAY_SECONDS": Setting(
        60.0,
        _number(float, minimum=0),
        "The most a delay_result_seconds fault may hold back one result.",
    ),
    "TRANSACTIONAL_TIMEOUT_SECONDS": Setting(
        10.0,
        _number(float, minimum=0.001),
        "The longest a transactional function's transaction may last (it holds row locks, "
        "and on SQLite the database's write lock, meanwhile). On PostgreSQL each "
        "statement and each idle gap of the function is cut off at this bound; past it "
        "the attempt fails (retryable) and its writes roll back.",
    ),
    # --- API -----------------------------------------------------------------------------
    "METRICS_PUBLIC": Setting(
        False,
        _flag,
        "GET /metrics without a token, for a Prometheus that cannot send one.",
    ),
    "API_MAX_PAGE_SIZE": Setting(
        500,
        _number(int, minimum=1),
        "Largest ?limit= on /workflows, /executions, /schedules and a workflow's versions.",
    ),
    "API_MAX_LOG_PAGE_SIZE": Setting(
        5000,
        _number(int, minimum=1),
        "Largest ?limit= on an execution's tasks and events.",
    ),
    "API_TASK_DETAIL_ITEMS": Setting(
        100,
        _number(int, minimum=1),
        "How many of a node's latest attempts and events GET .../tasks/{node_id} includes.",
    ),
    "BULK_MAX_EXECUTIONS": Setting(
        1000,
        _number(int, minimum=1),
        "Most executions one POST /executions/bulk/cancel|retry may act on.",
    ),
    "BACKFILL_MAX": Setting(
        1000,
        _number(int, minimum=1),
        "Most fire times one POST /schedules/{id}/backfill may start; a longer range is "
        "refused with a 400 naming this setting.",
    ),
    # --- Bounds on work (workflows/dsl/limits.py holds each default and what it bounds) ---
    **{
        name.removeprefix(PREFIX): Setting(default, _number(type(default)), description)
        for name, (default, description) in bounds.documented().items()
    },
}


class EngineSettings:
    """`engine_settings.<NAME>`: the project's WORKFLOW_<NAME>, else its default."""

    # What each setting holds, for type checkers; SETTINGS has every name and default.
    FUNCTION_MODULES: list[str]
    NODE_QUEUES: dict[str, str]
    VAR_DIR: Path
    SWEEP_INTERVAL: float
    SWEEPER_STALE_SECONDS: float | None
    DEFAULT_LEASE_SECONDS: float
    REPUBLISH_AFTER_SECONDS: float
    MAX_IN_FLIGHT_PER_EXECUTION: int
    MAX_DEPTH: int
    MAX_RECORDED_BYTES: int
    RETENTION_DAYS: float | None
    HTTP_ALLOWED_HOSTS: list[str]
    SECRETS: dict[str, str]
    OTEL_EXPORTER: str
    FAULT_INJECTION: bool
    FAULT_MAX_DELAY_SECONDS: float
    TRANSACTIONAL_TIMEOUT_SECONDS: float
    METRICS_PUBLIC: bool
    API_MAX_PAGE_SIZE: int
    API_MAX_LOG_PAGE_SIZE: int
    API_TASK_DETAIL_ITEMS: int
    BULK_MAX_EXECUTIONS: int
    BACKFILL_MAX: int

    def __init__(self, specs: Mapping[str, Setting]) -> None:
        self._specs = specs
        self._read: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        spec = self.__dict__.get("_specs", {}).get(name)
        if spec is None:
            raise AttributeError(f"no engine setting {name!r} (settings: workflows/conf.py)")
        value = _cleaned(name, getattr(settings, PREFIX + name, spec.default), spec)
        # Kept as an attribute, so the next read does not come here (DRF does the same).
        setattr(self, name, value)
        self._read.add(name)
        return value

    def reload(self) -> None:
        """Read every setting again when next used."""
        for name in self._read:
            self.__dict__.pop(name, None)
        self._read.clear()

    def problems(self) -> list[str]:
        """What is wrong with the project's settings (every one read): empty when nothing."""
        found = []
        for name in self._specs:
            try:
                getattr(self, name)
            except ImproperlyConfigured as error:
                found.append(str(error))
        return found


def _cleaned(name: str, value: Any, spec: Setting) -> Any:
    try:
        return spec.clean(value)
    except (TypeError, ValueError) as error:
        raise ImproperlyConfigured(f"{PREFIX}{name} {error}") from None


engine_settings = EngineSettings(SETTINGS)


def configure_limits() -> None:
    """Hand the bounds to the pure module that enforces them (the engine core imports no
    Django), as the settings have them now."""
    bounds.configure_from(
        lambda setting, _default: getattr(engine_settings, setting.removeprefix(PREFIX))
    )


_LIMIT_SETTINGS = frozenset(bounds.documented())


def _reload(*, setting: str, **_: object) -> None:
    if setting.startswith(PREFIX):
        engine_settings.reload()
        if setting in _LIMIT_SETTINGS:
            # A wrong bound keeps the ones in force: reading it says what is wrong (and at
            # start, WorkflowsConfig.ready refuses it).
            with contextlib.suppress(ImproperlyConfigured):
                configure_limits()


setting_changed.connect(_reload, dispatch_uid="workflows.conf")


def from_environment(environ: Mapping[str, str]) -> dict[str, Any]:
    """The WORKFLOW_<NAME> settings the environment sets, checked and as the engine uses
    them; secrets from one variable each, WORKFLOW_SECRET_<NAME>. For a project that
    configures itself from the environment (the standalone one)."""
    found = {
        PREFIX + name: _cleaned(name, environ[PREFIX + name], spec)
        for name, spec in SETTINGS.items()
        if PREFIX + name in environ and name != "SECRETS"
    }
    secrets = secrets_from(environ.items())
    if secrets:
        found[PREFIX + "SECRETS"] = secrets
    return found


def secrets_from(variables: Iterable[tuple[str, str]]) -> dict[str, str]:
    return {
        key.removeprefix(SECRET_PREFIX): value
        for key, value in variables
        if key.startswith(SECRET_PREFIX) and key != SECRET_PREFIX
    }
