"""Bounds on the work one definition, expression or attempt may cause.

Pure Python, so the DSL and the engine core can read them: the defaults live here, and
`executions.apps` replaces them from Django settings (`WORKFLOW_...`) at ready(). Every
message about a bound names the setting that raises it (`over(...)`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any

_DAY = 24 * 3600


def _limit(default: float, setting: str, unit: str, description: str) -> Any:
    return field(
        default=default,
        metadata={"setting": setting, "unit": unit, "description": description},
    )


@dataclass(frozen=True)
class Limits:
    """Each field's metadata names the setting (environment variable) that sets it, and
    says what it bounds (docs/reference/settings.md is generated from it)."""

    max_expression_length: int = _limit(
        2048,
        "WORKFLOW_MAX_EXPRESSION_LENGTH",
        " characters",
        "Characters in one `{{ expr }}` or bare expression (when, items).",
    )
    max_expression_work: int = _limit(
        250_000,
        "WORKFLOW_MAX_EXPRESSION_WORK",
        " work units",
        "Work units of one evaluation: one per AST visit plus the size of what it builds.",
    )
    max_step_work: int = _limit(
        1_000_000,
        "WORKFLOW_MAX_STEP_WORK",
        " work units",
        "Work units of all the expressions one decide call evaluates (e.g. every first "
        "node inside POST /executions).",
    )
    expression_cache_chars: int = _limit(
        262_144,
        "WORKFLOW_EXPRESSION_CACHE_CHARS",
        "",
        "Characters of expression text the compiled-expression cache holds (memory bound).",
    )
    max_rendered_bytes: int = _limit(
        1024 * 1024,
        "WORKFLOW_MAX_RENDERED_BYTES",
        " bytes",
        "Bytes (compact JSON) of any value a template renders: a node's input, map items.",
    )
    max_delay_seconds: float = _limit(
        3660.0 * _DAY,
        "WORKFLOW_MAX_DELAY_SECONDS",
        " s",
        "A delay node's `seconds`, or how far ahead its `until` may be.",
    )
    map_max_items: int = _limit(
        10_000, "WORKFLOW_MAP_MAX_ITEMS", " items", "Items one map node may fan out to."
    )
    map_default_max_parallel: int = _limit(
        32,
        "WORKFLOW_MAP_DEFAULT_MAX_PARALLEL",
        "",
        "A map's max_parallel when it gives none.",
    )
    map_max_parallel: int = _limit(
        1000, "WORKFLOW_MAP_MAX_PARALLEL", "", "The largest max_parallel a map may give."
    )
    max_attempts: int = _limit(
        100,
        "WORKFLOW_MAX_ATTEMPTS",
        " attempts",
        "The largest max_attempts a retry policy may give.",
    )
    min_retry_interval_seconds: float = _limit(
        0.1,
        "WORKFLOW_MIN_RETRY_INTERVAL_SECONDS",
        " s",
        "The smallest initial_interval_seconds a retry policy may give.",
    )
    max_timeout_seconds: float = _limit(
        30.0 * _DAY,
        "WORKFLOW_MAX_TIMEOUT_SECONDS",
        " s",
        "timeout_seconds of any node (approvals and sub-workflows may wait long).",
    )
    max_heartbeat_timeout_seconds: float = _limit(
        float(_DAY),
        "WORKFLOW_MAX_HEARTBEAT_TIMEOUT_SECONDS",
        " s",
        "heartbeat_timeout_seconds of any node.",
    )
    max_definition_bytes: int = _limit(
        512 * 1024,
        "WORKFLOW_MAX_DEFINITION_BYTES",
        " bytes",
        "Bytes (compact JSON) of one definition.",
    )
    max_nodes: int = _limit(1000, "WORKFLOW_MAX_NODES", " nodes", "Nodes in one definition.")
    max_sleep_seconds: float = _limit(
        3600.0, "WORKFLOW_MAX_SLEEP_SECONDS", " s", "std.sleep's `seconds`."
    )
    http_default_timeout_seconds: float = _limit(
        30.0,
        "WORKFLOW_HTTP_DEFAULT_TIMEOUT_SECONDS",
        " s",
        "An HTTP node's total time (connect, send, headers and body) when it sets no "
        "timeout_seconds.",
    )
    http_max_response_bytes: int = _limit(
        1024 * 1024,
        "WORKFLOW_HTTP_MAX_RESPONSE_BYTES",
        " bytes",
        "Bytes of an HTTP response body kept in the log; the rest is cut, marked truncated.",
    )
    max_retry_after_seconds: float = _limit(
        float(_DAY),
        "WORKFLOW_MAX_RETRY_AFTER_SECONDS",
        " s",
        "A server's Retry-After is clamped into [0, this].",
    )
    attempt_hard_limit_seconds: float = _limit(
        3600.0,
        "WORKFLOW_ATTEMPT_HARD_LIMIT_SECONDS",
        " s",
        "Wall time of one attempt on a worker (timeout_seconds when smaller); past it the "
        "worker process is replaced and its slot reclaimed.",
    )


_current = Limits()

#: The bounds decide's results depend on. Recorded in each execution's workflow_started
#: (`decision_limits`) and in force for its decisions ever after (`recorded`, in decide),
#: so a setting changed later never makes a stored log disagree with `--verify`.
DECISION_LIMITS = (
    "max_expression_length",
    "max_expression_work",
    "max_step_work",
    "max_rendered_bytes",
    "max_delay_seconds",
    "map_max_items",
    "map_default_max_parallel",
)
#: An execution's recorded bounds while decide runs for it (per thread and task).
_RECORDED: ContextVar[Limits | None] = ContextVar("recorded_limits", default=None)


def limits() -> Limits:
    """The bounds in force: inside `recorded`, the execution's; else the settings' (the
    defaults until `configure` runs)."""
    return _RECORDED.get() or _current


def decision_limits() -> dict[str, float]:
    """The DECISION_LIMITS in force now, as an execution records them when it starts."""
    bounds = limits()
    return {name: getattr(bounds, name) for name in DECISION_LIMITS}


@contextmanager
def recorded(values: Mapping[str, Any] | None) -> Iterator[Limits]:
    """The bounds an execution recorded at its start, in force inside the block. A history
    that recorded none (older than the recording) gets the bounds in force, as before; a
    name this version does not know, or a value that is not a number, is ignored."""
    token = enter_recorded(values)
    try:
        yield limits()
    finally:
        exit_recorded(token)


def enter_recorded(values: Mapping[str, Any] | None) -> Token[Limits | None] | None:
    """`recorded` without a generator, for decide's hot path: pass the token (None when
    nothing was recorded) to `exit_recorded`, in a finally."""
    if not values:
        return None
    bounds = _recorded_bounds(values)
    return None if bounds is None else _RECORDED.set(bounds)


def exit_recorded(token: Token[Limits | None] | None) -> None:
    if token is not None:
        _RECORDED.reset(token)


#: (values, the bounds they were applied to, the result) of the last `_recorded_bounds`:
#: decide runs once per fact with the same recorded values, and dataclasses.replace of
#: every field cost more than the rest of a small decide.
_LAST: tuple[dict[str, Any], Limits, Limits | None] | None = None


def _recorded_bounds(values: Mapping[str, Any]) -> Limits | None:
    global _LAST
    base = limits()
    last = _LAST  # one read: another thread may replace it meanwhile
    if last is not None and last[1] is base and last[0] == values:
        return last[2]
    known = {
        name: type(getattr(_current, name))(value)
        for name, value in values.items()
        if name in _FIELDS and isinstance(value, int | float) and not isinstance(value, bool)
    }
    bounds = dataclasses.replace(base, **known) if known else None
    _LAST = (dict(values), base, bounds)
    return bounds


def setting_of(name: str) -> str:
    setting: str = _FIELDS[name].metadata["setting"]
    return setting


def over(name: str, *, what: str, got: float | None = None) -> str:
    """ "<what> (<got>) is over the limit of <limit> (setting WORKFLOW_X)"."""
    return _past(name, what, got, "over the limit of")


def under(name: str, *, what: str, got: float | None = None) -> str:
    """ "<what> (<got>) is under the minimum of <limit> (setting WORKFLOW_X)"."""
    return _past(name, what, got, "under the minimum of")


def _past(name: str, what: str, got: float | None, relation: str) -> str:
    spec = _FIELDS[name]
    unit = spec.metadata["unit"]
    shown = "" if got is None else f" ({_fmt(got)}{unit})"
    limit = _fmt(getattr(limits(), name))
    return f"{what}{shown} is {relation} {limit}{unit} (setting {spec.metadata['setting']})"


def _fmt(value: float) -> str:
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:g}"


def configure(**values: float) -> Limits:
    """Replace some bounds; unknown names are a programming error."""
    global _current
    unknown = set(values) - set(_FIELDS)
    if unknown:
        raise TypeError(f"unknown limits: {', '.join(sorted(unknown))}")
    changes: dict[str, Any] = dict(values)  # int and float fields alike
    _current = dataclasses.replace(_current, **changes)
    return _current


def configure_from(get: Callable[[str, Any], Any]) -> Limits:
    """Read every bound from `get(setting name, default)`, e.g. getattr on Django settings."""
    values = {
        name: type(getattr(Limits(), name))(get(spec.metadata["setting"], spec.default))
        for name, spec in _FIELDS.items()
    }
    return configure(**values)


@contextmanager
def overridden(**values: float) -> Iterator[Limits]:
    """Tests: other bounds for the duration of a block."""
    before = _current
    try:
        yield configure(**values)
    finally:
        globals()["_current"] = before


def documented() -> Mapping[str, tuple[Any, str]]:
    """setting name -> (default, description) for every bound; for docs and the report."""
    return {
        spec.metadata["setting"]: (spec.default, spec.metadata["description"])
        for spec in _FIELDS.values()
    }


_FIELDS = {spec.name: spec for spec in dataclasses.fields(Limits)}
