"""Functions for the sample user-signup workflow (verify → workspace → email + team → done).

Each one takes a little time (``"sleep_seconds"`` in the input overrides it), heartbeats
while it waits, and derives its ids from the idempotency key, so a retried attempt
produces the same output.
"""

from __future__ import annotations

import hashlib
from typing import Any

from nodes.context import NodeContext
from nodes.registry import workflow_function


def _fields(input: Any) -> dict[str, Any]:
    return input if isinstance(input, dict) else {}


def _work(input: dict[str, Any], ctx: NodeContext, default_seconds: float) -> None:
    seconds = input.get("sleep_seconds", default_seconds)
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        seconds = default_seconds
    ctx.sleep(float(seconds))


def _stable_id(prefix: str, ctx: NodeContext) -> str:
    digest = hashlib.sha256(ctx.idempotency_key.encode()).hexdigest()[:12]
    return f"{prefix}_{digest}"


@workflow_function("demo.verify_account")
def verify_account(input: Any, ctx: NodeContext) -> dict[str, Any]:
    """``{"user_id", "email"}`` → ``{"user_id", "email", "verified": true}``."""
    data = _fields(input)
    _work(data, ctx, 0.5)
    user_id = data.get("user_id") or _stable_id("user", ctx)
    email = data.get("email") or f"{user_id}@example.com"
    return {"user_id": user_id, "email": email, "verified": True}


@workflow_function("demo.create_workspace")
def create_workspace(input: Any, ctx: NodeContext) -> dict[str, Any]:
    """``{"user_id", "name"?}`` → ``{"workspace_id", "owner", "name"}``."""
    data = _fields(input)
    _work(data, ctx, 1.0)
    owner = data.get("user_id") or data.get("owner")
    name = data.get("name") or f"{owner or 'new'}'s workspace"
    return {"workspace_id": _stable_id("ws", ctx), "owner": owner, "name": name}


@workflow_function("demo.send_email")
def send_email(input: Any, ctx: NodeContext) -> dict[str, Any]:
    """``{"to"|"email", "template"?}`` → ``{"message_id", "to", "template", "sent": true}``."""
    data = _fields(input)
    _work(data, ctx, 0.5)
    return {
        "message_id": _stable_id("msg", ctx),
        "to": data.get("to") or data.get("email"),
        "template": data.get("template", "welcome"),
        "sent": True,
    }


@workflow_function("demo.create_team")
def create_team(input: Any, ctx: NodeContext) -> dict[str, Any]:
    """``{"workspace_id", "user_id"?, "name"?}`` → ``{"team_id", "workspace_id", "name",
    "members"}``."""
    data = _fields(input)
    _work(data, ctx, 0.75)
    user_id = data.get("user_id")
    return {
        "team_id": _stable_id("team", ctx),
        "workspace_id": data.get("workspace_id"),
        "name": data.get("name", "Core team"),
        "members": [user_id] if user_id else [],
    }


@workflow_function("demo.done")
def done(input: Any, ctx: NodeContext) -> dict[str, Any]:
    """Anything → ``{"status": "onboarded", "summary": <input>}``."""
    data = _fields(input)
    _work(data, ctx, 0.5)
    summary = {k: v for k, v in data.items() if k != "sleep_seconds"} if data else input
    return {"status": "onboarded", "execution_id": ctx.execution_id, "summary": summary}
