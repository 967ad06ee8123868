"""What the demo prints: each node's progress live, then the outcome and the event log."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.management import get_commands

if TYPE_CHECKING:
    from config.demo.client import DemoClient

TERMINAL = {"succeeded", "failed", "cancelled"}
POLL_SECONDS = 0.5

Out = Callable[[str], None]


class Clock:
    """The time since the demo began, and from the start of the execution on."""

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.t0 = time.monotonic()

    def seconds(self) -> float:
        return time.monotonic() - self.t0

    def elapsed(self) -> str:
        return f"+{self.seconds():6.1f}s"


def follow(
    client: DemoClient, execution_id: str, definition: dict, timeout: float, clock: Clock, out: Out
) -> dict:
    """Print each change of the execution's and its tasks' status until it ends (or `timeout`)."""
    order = {node["id"]: i for i, node in enumerate(definition.get("nodes", []))}
    width = max([len(n) for n in order] + [9])
    seen: dict[str, tuple] = {}
    last_status = None
    deadline = time.monotonic() + timeout
    while True:
        client.check()
        execution = client.call("GET", f"/executions/{execution_id}")
        tasks = list(client.pages(f"/executions/{execution_id}/tasks"))
        tasks.sort(key=lambda t: (order.get(t.get("node_id"), len(order)), str(t.get("node_id"))))
        status = execution.get("status")
        if status != last_status and status not in TERMINAL:
            last_status = status
            out(f"  {clock.elapsed()}  {'execution':<{width}}  {status}")
        for task in tasks:
            node = str(task.get("node_id"))
            attempts = task.get("attempts")
            if isinstance(attempts, list):
                attempts = len(attempts)
            key = (task.get("status"), attempts)
            if seen.get(node) != key:
                seen[node] = key
                out(f"  {clock.elapsed()}  {node:<{width}}  {task_note(task, attempts)}")
        if status in TERMINAL:
            out(f"  {clock.elapsed()}  {'execution':<{width}}  {status}")
            return execution
        if time.monotonic() > deadline:
            out(
                f"  {clock.elapsed()}  still {status} after {timeout:.0f}s;"
                " giving up waiting (see var/logs/worker.log)"
            )
            return execution
        time.sleep(POLL_SECONDS)


def task_note(task: dict, attempts: Any) -> str:
    status = str(task.get("status"))
    note = f"{status:<10}"
    if attempts:
        note += f" attempt {attempts}"
    if status == "retrying" and task.get("next_retry_at"):
        note += f", retry at {task['next_retry_at']}"
    if status in {"failed", "retrying"} and task.get("error"):
        error = task["error"]
        if isinstance(error, dict):
            error = error.get("message") or error.get("type") or error
        note += f"  ({str(error)[:100]})"
    return note.rstrip()


def report(
    client: DemoClient, execution: dict, execution_id: str, base_url: str, token: str, out: Out
) -> None:
    status = execution.get("status")
    out("")
    out(f"Execution {execution_id} {status}.")
    if execution.get("error"):
        out("Error:  " + json.dumps(execution["error"], indent=2, default=str))
    out("Output: " + json.dumps(execution.get("output"), indent=2, default=str))
    print_events(list(client.pages(f"/executions/{execution_id}/events")), out)
    print_pointers(execution_id, base_url, token, out)


def print_events(events: list[dict], out: Out) -> None:
    out("")
    out(f"Event log ({len(events)} events, the source of truth):")
    out(f"  {'seq':>4}  {'time':>7}  {'type':<26} {'node':<12} attempt")
    first = parse_time(events[0].get("timestamp")) if events else None
    for event in events:
        when = parse_time(event.get("timestamp"))
        offset = f"{(when - first).total_seconds():6.2f}s" if when and first else "      -"
        node = event.get("node_id") or "-"
        attempt = event.get("attempt")
        out(
            f"  {event.get('seq', '?'):>4}  {offset:>7}  {event.get('type')!s:<26} "
            f"{node:<12} {attempt if attempt is not None else '-'}"
        )


def print_pointers(execution_id: str, base_url: str, token: str, out: Out) -> None:
    logs = Path(settings.VAR_DIR) / "logs"
    out("")
    out("Where to look:")
    out(f"  admin     {base_url}/admin/   (user admin)")
    out(f"  API       {base_url}/workflows   {base_url}/executions")
    out(f"  docs      {base_url}/docs   (OpenAPI: {base_url}/schema)")
    out(f"  token     {token}")
    out(
        f"  try       curl -s -H 'Authorization: Token {token}' "
        f"{base_url}/executions/{execution_id}/events"
    )
    if "replay_execution" in get_commands():
        out(f"  replay    ./dev manage replay_execution {execution_id} --verify")
    out(f"  logs      {logs}/web.log, worker.log, beat.log")
    out("")


def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
