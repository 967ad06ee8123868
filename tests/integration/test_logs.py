"""A real worker's log: JSON lines with time, level and the engine's context.

The session's worker runs with the default WORKFLOW_LOG_FORMAT (json); the lines about
this test's execution must each carry its execution_id, node_id, attempt and worker."""

from __future__ import annotations

import json
from typing import Any

from tests.factories import start
from tests.integration.engine import Engine

TWO_STEPS = {
    "nodes": [
        {"id": "first", "type": "function", "function": "std.echo", "input": {"x": 1}},
        {
            "id": "second",
            "type": "function",
            "function": "std.fail",
            "depends_on": ["first"],
            "input": {"message": "no luck", "retryable": True},
            "retry_policy": {"max_attempts": 2, "initial_interval_seconds": 0.1, "jitter": False},
        },
    ]
}
FIELDS = {"time", "level", "logger", "message", "execution_id", "node_id", "attempt", "worker"}


def json_lines(text: str) -> list[dict[str, Any]]:
    """Every log line of a worker (its log file opens with the supervisor's '#' header and
    Celery's start-up banner, which are not log records)."""
    records = []
    for line in text.splitlines():
        if line.startswith("{"):
            records.append(json.loads(line))  # a line that starts like JSON must be JSON
    return records


def test_worker_log_lines_are_json_with_the_engine_context(live: Engine) -> None:
    execution = live.wait(start(TWO_STEPS).pk)
    assert execution.status == "failed"
    records = [r for worker in live.workers for r in json_lines(worker.log())]
    assert records, "the worker logged no JSON line"
    for record in records:
        assert record.keys() >= FIELDS, record
        assert record["level"] in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}
    # Celery's own lines are JSON too (the worker's "ready" line among them).
    assert any(r["logger"].startswith("celery") for r in records)

    mine = [r for r in records if r["execution_id"] == str(execution.pk)]
    engine = [r for r in mine if r["logger"].startswith("executions.")]
    by_attempt = {(r["node_id"], r["attempt"]) for r in engine}
    assert by_attempt == {("first", 1), ("second", 1), ("second", 2)}, engine
    for record in engine:
        assert record["worker"], record
        assert record["time"].startswith(str(execution.created_at.year))
    messages = [(r["node_id"], r["attempt"], r["message"].split(" ")[1]) for r in engine]
    assert ("first", 1, "succeeded") in messages
    assert ("second", 2, "failed") in messages
    failed = next(r for r in engine if r["node_id"] == "second" and "failed" in r["message"])
    assert "no luck" in failed["message"]
