"""A node's `"rate_limit": {"key"?: "<template>", "per_second": r, "burst"?: b}`: at most r
attempts a second start per rendered key, across every execution (a token bucket of b
tokens refilled at r a second; executions/kernel/rates.py holds the buckets).

The key is rendered when an attempt is claimed, over the node's template context (its
input, its upstream nodes' outputs, the execution): it decides only whether the attempt
may start yet, never what it does. Without a key, the workflow's node is its own bucket.
Pure Python: no Django.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from workflows.dsl.checks import Collector, Scope, no_secrets
from workflows.dsl.concurrency import key_text
from workflows.dsl.references import check_templates

FIELDS = ("key", "per_second", "burst")
#: RateBucket.key's column width.
MAX_KEY_LENGTH = 255
#: A limit this high is no limit a worker could reach; larger is a typo.
MAX_PER_SECOND = 1_000_000.0
_EXAMPLE = '{"key": "{{ input.account }}", "per_second": 5, "burst": 10}'


@dataclass(frozen=True)
class RateLimitSpec:
    """At most `per_second` attempts start a second per rendered `key`, `burst` at once."""

    #: A template over the node's context; None: one bucket for the workflow's node.
    key: str | None
    per_second: float
    #: Tokens the bucket holds when full: starts allowed at once after a quiet spell.
    burst: int


def default_burst(per_second: float) -> int:
    """A second's worth of starts, and at least one (a bucket of none starts nothing)."""
    return max(1, math.ceil(per_second))


def parse_rate_limit(c: Collector, raw: object, scope: Scope, prefix: str) -> RateLimitSpec | None:
    """The node's `rate_limit` (at `prefix`, e.g. "rate_limit" or "node.rate_limit"), or
    None with its problems recorded in `c`."""
    node = scope.node
    top = c.mapping(raw, node=node, field=prefix, what=f"an object like {_EXAMPLE}")
    if top is None:
        return None
    before = len(c.problems)
    c.unknown_keys(top, FIELDS, node=node, prefix=prefix + ".", what="rate_limit")
    key = None
    if "key" in top:
        key = c.string(top["key"], node=node, field=prefix + ".key", what="a template string")
        if key is not None:
            # Rendered under the execution's lock, where secrets are never at hand.
            check_templates(c, key, scope=no_secrets(scope), field=prefix + ".key")
    rate = c.number(top.get("per_second"), node=node, field=prefix + ".per_second", exclusive=True)
    if rate is not None and rate > MAX_PER_SECOND:
        c.add(f"must be at most {MAX_PER_SECOND:g}", node=node, field=prefix + ".per_second")
    burst = None
    if "burst" in top:
        burst = c.integer(top["burst"], node=node, field=prefix + ".burst", minimum=1)
    if rate is None or len(c.problems) > before:
        return None
    return RateLimitSpec(key=key, per_second=rate, burst=burst or default_burst(rate))


class RateKeyError(ValueError):
    """The key template failed for this context, or rendered no usable key."""


def render_rate_key(
    spec: RateLimitSpec, context: dict[str, Any], *, workflow_id: int, node_id: str
) -> str:
    """The bucket's name: `key:<rendered key>`, or `node:<workflow id>:<node id>` without
    a key (a map's items share their map node's). RateKeyError names what went wrong."""
    if spec.key is None:
        return f"node:{workflow_id}:{node_id.partition('[')[0]}"
    try:
        value = key_text(spec.key, context, field="rate_limit.key")
    except ValueError as exc:
        raise RateKeyError(str(exc)) from None
    name = f"key:{value}"
    if len(name) > MAX_KEY_LENGTH:
        raise RateKeyError(f"rate_limit.key {spec.key!r} rendered {len(value)} characters")
    return name
