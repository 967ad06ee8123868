"""Errors a node raises to report how its attempt ended.

Plain Python, no Django: the worker runtime (executions/worker/runtime.py) turns these
into events.
"""

from __future__ import annotations

from typing import Any

CORE_KEYS = ("type", "message", "retryable")


class NodeError(Exception):
    """An attempt failed.

    ``type`` is the error's type name; it is matched against a retry policy's
    ``non_retryable_errors``. ``retryable=False`` fails the node for good, whatever the
    policy says. ``details`` is extra JSON that is merged into the recorded error.
    """

    def __init__(
        self,
        message: str,
        type: str = "NodeError",
        retryable: bool = True,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message: str = message
        self.type: str = type
        self.retryable: bool = retryable
        self.details: dict[str, Any] | None = details

    def as_dict(self) -> dict[str, Any]:
        """The recorded error: ``{"type", "message", "retryable", **details}``.

        Details never override the three core keys.
        """
        result: dict[str, Any] = {
            "type": self.type,
            "message": self.message,
            "retryable": self.retryable,
        }
        for key, value in (self.details or {}).items():
            if key not in CORE_KEYS:
                result[key] = value
        return result

    def __repr__(self) -> str:
        return (
            f"NodeError(message={self.message!r}, type={self.type!r}, "
            f"retryable={self.retryable!r}, details={self.details!r})"
        )


class NodeCancelled(Exception):
    """The attempt was cancelled or its lease was lost: stop and record nothing."""

    def __init__(self, message: str = "attempt cancelled or lease lost") -> None:
        super().__init__(message)
        self.message: str = message
