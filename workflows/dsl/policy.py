"""Parsing of `retry_policy` objects, merged field by field over a base policy."""

from __future__ import annotations

import dataclasses
from typing import Any

from workflows.dsl.checks import Collector, describe
from workflows.dsl.model import RetryPolicy

POLICY_FIELDS = tuple(f.name for f in dataclasses.fields(RetryPolicy))


def parse_policy(
    c: Collector, raw: object, *, base: RetryPolicy, node: str | None, field: str
) -> RetryPolicy:
    """`raw` merged over `base`; on problems, the valid fields are still merged."""
    policy = c.mapping(
        raw, node=node, field=field, what=f"an object with some of {', '.join(POLICY_FIELDS)}"
    )
    if policy is None:
        return base
    c.unknown_keys(policy, POLICY_FIELDS, node=node, prefix=f"{field}.", what="a retry policy")
    at = f"{field}."
    values: dict[str, Any] = {}
    if "max_attempts" in policy:
        attempts = c.integer(policy["max_attempts"], node=node, field=at + "max_attempts")
        values["max_attempts"] = c.within(
            attempts, "max_attempts", node=node, field=at + "max_attempts"
        )
    if "initial_interval_seconds" in policy:
        interval = c.number(
            policy["initial_interval_seconds"],
            node=node,
            field=at + "initial_interval_seconds",
            exclusive=True,
        )
        values["initial_interval_seconds"] = c.within(
            interval,
            "min_retry_interval_seconds",
            node=node,
            field=at + "initial_interval_seconds",
            least=True,
        )
    if "backoff_coefficient" in policy:
        values["backoff_coefficient"] = c.number(
            policy["backoff_coefficient"], node=node, field=at + "backoff_coefficient", minimum=1
        )
    if "max_interval_seconds" in policy:
        values["max_interval_seconds"] = c.number(
            policy["max_interval_seconds"],
            node=node,
            field=at + "max_interval_seconds",
            exclusive=True,
        )
    if "jitter" in policy:
        values["jitter"] = _boolean(c, policy["jitter"], node=node, field=at + "jitter")
    if "non_retryable_errors" in policy:
        values["non_retryable_errors"] = _names(
            c, policy["non_retryable_errors"], node=node, field=at + "non_retryable_errors"
        )
    if "on_exhausted" in policy:
        values["on_exhausted"] = _on_exhausted(
            c, policy["on_exhausted"], node=node, field=at + "on_exhausted"
        )
    merged = dataclasses.replace(base, **{k: v for k, v in values.items() if v is not None})
    if merged.max_interval_seconds < merged.initial_interval_seconds:
        c.add(
            f"max_interval_seconds ({merged.max_interval_seconds:g}) must be >= "
            f"initial_interval_seconds ({merged.initial_interval_seconds:g}): "
            "raise the one or lower the other",
            node=node,
            field=at + "max_interval_seconds",
        )
    return merged


#: The values of `on_exhausted`.
ON_EXHAUSTED = ("fail", "park")


def _on_exhausted(c: Collector, value: object, *, node: str | None, field: str) -> str | None:
    if value not in ON_EXHAUSTED:
        c.add(f'must be "fail" or "park" (got {describe(value)})', node=node, field=field)
        return None
    return str(value)


def _boolean(c: Collector, value: object, *, node: str | None, field: str) -> bool | None:
    if not isinstance(value, bool):
        c.add(f"must be true or false (got {describe(value)})", node=node, field=field)
        return None
    return value


def _names(c: Collector, value: object, *, node: str | None, field: str) -> tuple[str, ...] | None:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        c.add(
            'must be a list of error type names, e.g. ["ValueError"]',
            node=node,
            field=field,
        )
        return None
    return tuple(value)
