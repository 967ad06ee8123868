"""Typed accessors for the one or two payload fields a fold step reads.

fold runs over every stored event; decoding a whole payload (engine/payloads.py) to read
one field cost about 1 us an event. A reader gives exactly what
`payloads.decode(cls, data, known).<name>` gives, without building the payload: the
carried payload's attribute when `known` is one of `cls` (decide's working events), else
the stored key or the field's default (decode only lets known keys set fields, and an
unknown key can never shadow a known one). Only plain fields: an error field is decoded
into an ErrorRecord, which a reader would not do, so making one for it is refused.

Pure Python: no Django.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from executions.engine import payloads as p
from executions.engine.errors import ErrorRecord, normal_json

#: (event.data, event.payload) -> the field's value, typed where the reader is declared.
Reader = Callable[[Mapping[str, Any], object], Any]


def reader(cls: type[p.Payload], name: str) -> Reader:
    """The accessor of `cls`'s field `name`: checked once here, against the codec's plan."""
    plan = p.plan_of(cls)
    if name not in plan.names or name in plan.errors:
        raise TypeError(f"{cls.__name__}.{name}: not a plain payload field")
    default = plan.defaults[name]

    def read(data: Mapping[str, Any], known: object) -> Any:
        if type(known) is cls:
            return known.__dict__[name]
        return data.get(name, default)

    return read


def failure_json(data: Mapping[str, Any], known: object, default: ErrorRecord) -> dict[str, Any]:
    """`(decode(TaskFailed, data, known).error or default).to_json()`, the form fold keeps a
    failed attempt's error in, without the payload and ErrorRecord in between (fold reads
    every failure)."""
    if type(known) is p.TaskFailed:
        return (known.error or default).to_json()
    raw = data.get("error")
    if not raw:
        return default.to_json()
    if type(raw) is dict:
        return normal_json(raw)
    error = p.decode(p.TaskFailed, data).error  # not an object: decode's own way
    return (error or default).to_json()


_Data = Mapping[str, Any]

SCHEDULED_INPUT: Callable[[_Data, object], Any] = reader(p.TaskScheduled, "input")
SCHEDULED_TYPE: Callable[[_Data, object], str | None] = reader(p.TaskScheduled, "type")
COMPLETED_OUTPUT: Callable[[_Data, object], Any] = reader(p.TaskCompleted, "output")
RETRY_DUE_AT: Callable[[_Data, object], str | None] = reader(p.TaskRetryScheduled, "due_at")
REASON: Callable[[_Data, object], str | None] = reader(p.Reason, "reason")
TIMER_INPUT: Callable[[_Data, object], Any] = reader(p.TimerStarted, "input")
TIMER_KIND: Callable[[_Data, object], str | None] = reader(p.TimerFired, "kind")
