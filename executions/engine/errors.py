"""ErrorRecord: the error a failed attempt, a failed execution or an engine error records.

Its stored form is the JSON object it came from: `type`, `message`, `retryable` when
present, then every other key (`details`) in its stored order. Pure Python: no Django.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

JSON = Any


@dataclass(frozen=True)
class ErrorRecord:
    """What failed and whether trying again may help. `details`: every other key of the
    stored error (a map's `items`, a failed workflow's `nodes`, a worker's `status_code`,
    ...), in their stored order."""

    type: str | None = None
    message: str | None = None
    #: None: not said (the retry policy treats it as retryable).
    retryable: bool | None = None
    details: Mapping[str, JSON] = field(default_factory=dict)

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {}
        if self.type is not None:
            out["type"] = self.type
        if self.message is not None:
            out["message"] = self.message
        if self.retryable is not None:
            out["retryable"] = self.retryable
        out.update(self.details)
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, JSON]) -> ErrorRecord:
        # fold reads every failure through here: filling the frozen instance's __dict__
        # skips the dataclass __init__'s object.__setattr__ per field (same values).
        record = object.__new__(cls)
        record.__dict__.update(
            type=raw.get("type"),
            message=raw.get("message"),
            retryable=raw.get("retryable"),
            details={k: v for k, v in raw.items() if k not in _ERROR_KEYS},
        )
        return record

    @property
    def cause(self) -> ErrorRecord | None:
        """The error this one wraps (a failed node's, a failed item's), if recorded."""
        cause = self.details.get("cause")
        return ErrorRecord.from_json(cause) if isinstance(cause, Mapping) else None


_ERROR_KEYS = frozenset({"type", "message", "retryable"})

#: The last (stored error, its record) record_of made: a failed node's stored error is one
#: dict that decide reads again in every step until the node moves on (retry decisions,
#: "failed for good?" in the fan-in and "anything busy?" checks). A tuple, so a reader in
#: another thread sees a matching pair or none.
_LAST: tuple[object, ErrorRecord | None] = (None, None)


def record_of(raw: Mapping[str, JSON] | None) -> ErrorRecord | None:
    """ErrorRecord.from_json(raw), or None for no error: a node state's stored error as the
    record the retry policy reads. The stored dicts are never changed in place (fold binds
    a new one), so the last one's record is reused while the same dict comes back."""
    global _LAST
    last_raw, last_record = _LAST
    if raw is last_raw:
        return last_record
    record = ErrorRecord.from_json(raw) if raw is not None else None
    _LAST = (raw, record)
    return record


def normal_json(raw: Mapping[str, JSON]) -> dict[str, JSON]:
    """`ErrorRecord.from_json(raw).to_json()` without the record in between (fold keeps
    every failure in this form)."""
    out: dict[str, JSON] = {}
    for key in ("type", "message", "retryable"):
        value = raw.get(key)
        if value is not None:
            out[key] = value
    out.update((k, v) for k, v in raw.items() if k not in _ERROR_KEYS)
    return out
