"""The recorded scenarios: definitions and what drives each one on real workers.

Between them they produce every event type and every node kind, so a change to fold,
decide or the stored payloads that would break replaying executions already in a database
breaks tests/golden/test_golden_histories.py instead.
"""

from __future__ import annotations

from typing import Any

FAST_RETRY = {"max_attempts": 3, "initial_interval_seconds": 0.2, "backoff_coefficient": 2.0}


def signup(http_url: str) -> dict[str, Any]:
    """function, http, delay, parallel branches, a `when` that skips, an all_done join."""
    return {
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
                    "url": f"{http_url}/workspaces",
                    "json": {"owner": "{{ nodes.verify.output.user }}"},
                },
            },
            {"id": "cool_off", "type": "delay", "depends_on": ["workspace"], "seconds": 0.3},
            {
                "id": "email",
                "type": "function",
                "function": "std.echo",
                "depends_on": ["cool_off"],
                "input": {"to": "user-{{ input.user_id }}@example.com"},
            },
            {
                "id": "vip",
                "type": "function",
                "function": "std.noop",
                "depends_on": ["cool_off"],
                "when": "input.vip",
            },
            {
                "id": "done",
                "type": "function",
                "function": "std.echo",
                "depends_on": ["email", "vip"],
                "trigger_rule": "all_done",
                "input": {"email": "{{ nodes.email.output.to }}"},
            },
        ],
        "output": "{{ nodes.done.output }}",
    }


def http_retries(http_url: str) -> dict[str, Any]:
    """task_failed, task_retry_scheduled, a retry timer firing, success on attempt 3."""
    return {
        "nodes": [
            {
                "id": "call",
                "type": "http",
                "request": {"method": "GET", "url": f"{http_url}/flaky"},
            }
        ],
        "retry_policy": {**FAST_RETRY, "max_attempts": 5},
    }


APPROVAL = {
    "nodes": [
        {"id": "prepare", "type": "function", "function": "std.echo", "input": {"n": 1}},
        {"id": "sign_off", "type": "approval", "depends_on": ["prepare"]},
        {
            "id": "ship",
            "type": "function",
            "function": "std.echo",
            "depends_on": ["sign_off"],
            "input": {"approved_by": "{{ nodes.sign_off.output.by }}"},
        },
    ]
}

CHILD = {
    "nodes": [{"id": "inner", "type": "function", "function": "std.echo", "input": "{{ input }}"}],
    "output": "{{ nodes.inner.output }}",
}


def parent(child_name: str) -> dict[str, Any]:
    return {
        "nodes": [
            {
                "id": "sub",
                "type": "workflow",
                "workflow": child_name,
                "input": {"x": "{{ input.x }}"},
            },
            {
                "id": "after",
                "type": "function",
                "function": "std.echo",
                "depends_on": ["sub"],
                "input": "{{ nodes.sub.output }}",
            },
        ]
    }


MAP = {
    "nodes": [
        {
            "id": "each",
            "type": "map",
            "items": "input.items",
            "max_parallel": 2,
            "node": {"type": "function", "function": "std.echo", "input": {"v": "{{ item }}"}},
        }
    ]
}

COMPENSATION = {
    "nodes": [
        {
            "id": "reserve",
            "type": "function",
            "function": "std.echo",
            "input": {"seat": 7},
            "compensation": {"type": "function", "function": "std.echo", "input": {"undo": 7}},
        },
        {
            "id": "charge",
            "type": "function",
            "function": "std.fail",
            "depends_on": ["reserve"],
            "input": {"message": "card declined", "retryable": False},
        },
    ]
}

SLEEPER = {
    "nodes": [
        {"id": "nap", "type": "function", "function": "std.sleep", "input": {"seconds": 20}},
        {"id": "after", "type": "function", "function": "std.noop", "depends_on": ["nap"]},
    ]
}

TIMEOUT = {
    "nodes": [
        {
            "id": "slow",
            "type": "function",
            "function": "std.sleep",
            "input": {"seconds": 10},
            "timeout_seconds": 1,
            "retry_policy": {"max_attempts": 1},
        }
    ]
}


def fixable(http_url: str) -> dict[str, Any]:
    """Fails for good (one attempt), then an operator's retry succeeds: retry_requested."""
    return {
        "nodes": [
            {"id": "first", "type": "function", "function": "std.echo", "input": {"a": 1}},
            {
                "id": "call",
                "type": "http",
                "depends_on": ["first"],
                "request": {"method": "GET", "url": f"{http_url}/fixable"},
                "retry_policy": {"max_attempts": 1},
            },
        ]
    }


#: Paused while `nap` runs: nap's result is recorded, `after` and the timer wait for resume.
PAUSE = {
    "nodes": [
        {"id": "nap", "type": "function", "function": "std.sleep", "input": {"seconds": 2}},
        {"id": "wait", "type": "delay", "seconds": 1},
        {"id": "after", "type": "function", "function": "std.noop", "depends_on": ["nap", "wait"]},
    ]
}


def faults_seed(node_id: str = "charge") -> int:
    """A seed under which a crash_after_effect of probability 0.5 hits the node's first
    attempt and spares its second (executions/engine/faults.py)."""
    from executions.engine.faults import CRASH_AFTER_EFFECT, draw

    return next(
        seed
        for seed in range(10_000)
        if draw(seed, CRASH_AFTER_EFFECT, node_id, 1) < 0.5
        and draw(seed, CRASH_AFTER_EFFECT, node_id, 2) >= 0.5
    )


FAULTY = {
    "nodes": [{"id": "charge", "type": "function", "function": "std.echo", "input": {"amount": 5}}],
    "retry_policy": FAST_RETRY,
}
FAULTS = {
    "duplicate_delivery": 1.0,
    "crash_after_effect": 0.5,
    "delay_result_seconds": 0.3,
    "seed": faults_seed(),
}

#: An unanswered approval that on_timeout approves: approval_timed_out.
APPROVAL_TIMEOUT = {
    "nodes": [
        {"id": "sign_off", "type": "approval", "timeout_seconds": 1, "on_timeout": "approve"},
        {
            "id": "ship",
            "type": "function",
            "function": "std.echo",
            "depends_on": ["sign_off"],
            "input": "{{ nodes.sign_off.output.timed_out }}",
        },
    ]
}

#: A named signal sent before its node waits (kept), then delivered: the signal node.
SIGNAL = {
    "nodes": [
        {"id": "gate", "type": "approval"},
        {"id": "paid", "type": "signal", "signal": "payment", "depends_on": ["gate"]},
    ]
}

#: A definition's timeout_seconds passing while a node sleeps: workflow_timed_out, the
#: node cancelled, the saga run, the execution failed with a WorkflowTimeout.
WORKFLOW_TIMEOUT = {
    "timeout_seconds": 1,
    "nodes": [
        {
            "id": "book",
            "type": "function",
            "function": "std.echo",
            "compensation": {"type": "function", "function": "std.echo", "input": "undo"},
        },
        {
            "id": "slow",
            "type": "function",
            "function": "std.sleep",
            "depends_on": ["book"],
            "input": {"seconds": 60},
        },
    ],
}

#: A node out of attempts under on_exhausted "park": parked, retried (parked again), then
#: failed by an operator; the first node's compensation runs: task_parked, task_unparked.
PARKING = {
    "retry_policy": {"max_attempts": 2, "initial_interval_seconds": 0.2, "on_exhausted": "park"},
    "nodes": [
        {
            "id": "reserve",
            "type": "function",
            "function": "std.echo",
            "compensation": {"type": "function", "function": "std.noop"},
        },
        {
            "id": "charge",
            "type": "function",
            "function": "std.fail",
            "depends_on": ["reserve"],
            "input": {"message": "card declined", "retryable": True},
        },
    ],
}

#: Three calls under a rate limit of 2 a second with a burst of 1, on a key of their own
#: execution: the later ones wait (task_rate_limited), then start as tokens return.
RATE_LIMITED = {
    "nodes": [
        {
            "id": f"call{n}",
            "type": "function",
            "function": "std.echo",
            "input": n,
            "rate_limit": {"key": "golden-{{ execution.id }}", "per_second": 2, "burst": 1},
        }
        for n in range(3)
    ]
}
