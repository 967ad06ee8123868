"""What Flower sees: the real worker sends task events, and an attempt's run_task message
is named `wf:<workflow>/<node>#<attempt>` (a shadow name) instead of an opaque id.

A Celery event receiver in this process (what Flower and `celery events` run) listens
while a workflow with a retry runs on the session's worker."""

from __future__ import annotations

import ast
from collections import defaultdict
from typing import Any

from executions.models import Attempt
from tests.factories import start
from tests.integration.engine import Engine
from tests.waiting import eventually

RETRIED = {
    "nodes": [
        {"id": "fetch", "type": "function", "function": "std.echo", "input": {"x": 1}},
        {
            "id": "store",
            "type": "function",
            "function": "std.fail",
            "depends_on": ["fetch"],
            "input": {"message": "nope", "retryable": True},
            "retry_policy": {"max_attempts": 2, "initial_interval_seconds": 0.1, "jitter": False},
        },
    ]
}


def by_name(seen: list[dict[str, Any]]) -> dict[str, set[str]]:
    """{event type: the task names it was sent for}. A task's name is in its task-received
    event (the worker's view, the shadow name); the others carry only its uuid."""
    names = {e["uuid"]: e["name"] for e in seen if e["type"] == "task-received"}
    found: dict[str, set[str]] = defaultdict(set)
    for event in seen:
        name = names.get(event.get("uuid", ""))
        if name is not None:
            found[event["type"]].add(name)
    return found


def test_task_events_name_each_attempt(live: Engine, task_events) -> None:
    execution = live.wait(start(RETRIED).pk)
    assert execution.status == "failed"
    workflow = execution.workflow.name
    # store#1 has no message of its own: the worker that finished fetch#1 ran it in the
    # same task (eager dispatch of a held attempt). store#2, the retry, went through the
    # broker (its timer's advance published it).
    names = {f"wf:{workflow}/fetch#1", f"wf:{workflow}/store#2"}
    # Events travel through the broker after the result is recorded: they may trail the
    # execution's end by a moment.
    eventually(
        lambda: names <= by_name(list(task_events))["task-succeeded"],
        30,
        lambda: f"no task-succeeded event for each of {names}: {dict(by_name(list(task_events)))}",
    )
    found = by_name(list(task_events))
    # Sent by whoever published (this process or the worker), then received, started and
    # succeeded on the worker (the attempt's failure is recorded; the message succeeds).
    for kind in ("task-sent", "task-received", "task-started", "task-succeeded"):
        assert names <= found[kind], (kind, dict(found))
    attempts = dict(Attempt.objects.filter(execution=execution).values_list("pk", "node_id"))
    sent = [
        attempts[args[0]]
        for e in list(task_events)
        if e["type"] == "task-sent" and e.get("name", "").endswith("run_task")
        for args in [ast.literal_eval(e.get("args") or "()")]
        if args and args[0] in attempts
    ]
    assert sorted(sent) == ["fetch", "store"], sent  # one message each for fetch#1, store#2
