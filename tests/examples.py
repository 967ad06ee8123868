"""Definitions shared by tests: plain data, no Django."""

from __future__ import annotations

from typing import Any

#: A user-signup workflow: function, http and delay nodes, a fan-out of two functions,
#: a retry policy and an output.
SIGNUP_DEFINITION: dict[str, Any] = {
    "nodes": [
        {
            "id": "verify",
            "type": "function",
            "function": "std.echo",
            "input": {"user": "{{ input.user_id }}"},
        },
        {
            "id": "workspace",
            "type": "http",
            "depends_on": ["verify"],
            "request": {
                "method": "POST",
                "url": "https://api.example.com/workspaces",
                "json": {"owner": "{{ nodes.verify.output.user }}"},
            },
        },
        {"id": "cool_off", "type": "delay", "depends_on": ["workspace"], "seconds": 300},
        {"id": "email", "type": "function", "function": "std.echo", "depends_on": ["cool_off"]},
        {"id": "team", "type": "function", "function": "std.echo", "depends_on": ["cool_off"]},
    ],
    "retry_policy": {
        "max_attempts": 3,
        "initial_interval_seconds": 1,
        "backoff_coefficient": 2.0,
        "max_interval_seconds": 300,
        "jitter": True,
    },
    "output": "{{ nodes.team.output }}",
}
