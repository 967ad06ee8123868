"""Bounds on work, on real workers: each offender is refused with a 400 that names
the setting, or ends its own execution failed with an error that does; and an unrelated
execution started after it still times out, retries and finishes on time (the canary of
test_containment.py)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from executions.models import Event, Execution, Task
from tests import stuck_functions  # noqa: F401  (registers test.stuck here too)
from tests.factories import events, start
from tests.integration.engine import Engine
from tests.integration.test_containment import assert_canary_works
from tests.raw_server import raw_http_server, response
from tests.waiting import eventually, scaled

STAGE = " | [@,@,@,@,@,@,@,@,@,@][]"
#: Generous for two shared cores (and times the slowdown factor on a slower machine): a
#: POST that evaluated 10^7 values would take minutes.
FAST_POST_SECONDS = 5.0


@pytest.fixture
def api(live) -> APIClient:
    name = f"bounds-{uuid.uuid4().hex[:8]}"
    admin = get_user_model().objects.create_superuser(name, f"{name}@example.com", "pw-" + name)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=admin).key}")
    return client


def create(api: APIClient, definition: dict[str, Any]) -> Any:
    name = f"bounds-{uuid.uuid4().hex[:10]}"
    return api.post("/workflows", {"name": name, "definition": definition}, format="json")


def post_execution(api: APIClient, definition: dict[str, Any], input: Any) -> tuple[str, float]:
    """Create the workflow, then time POST /executions; (execution id, seconds)."""
    created = create(api, definition)
    assert created.status_code == 201, created.content
    began = time.monotonic()
    posted = api.post(
        "/executions", {"workflow": created.json()["name"], "input": input}, format="json"
    )
    took = time.monotonic() - began
    assert posted.status_code == 201, posted.content
    return posted.json()["id"], took


def failed_node(execution: Execution, node_id: str) -> dict[str, Any]:
    task = Task.objects.get(execution=execution, node_id=node_id)
    assert task.status == "failed", (task.status, task.error)
    assert task.error is not None
    return task.error


@pytest.mark.parametrize(
    ("until", "fragment"),
    [
        ("9999-12-31T23:59:59-23:59", "out of the range"),
        ("9000-01-01T00:00:00+00:00", "WORKFLOW_MAX_DELAY_SECONDS"),
    ],
)
def test_a_far_until_is_refused_when_literal_and_fails_its_node_when_templated(
    live, api: APIClient, until: str, fragment: str
) -> None:
    refused = create(api, {"nodes": [{"id": "wait", "type": "delay", "until": until}]})
    assert refused.status_code == 400, refused.content
    assert any(
        e["node"] == "wait" and e["field"] == "until" and fragment in e["message"]
        for e in refused.json()["errors"]
    ), refused.json()

    templated = {"nodes": [{"id": "wait", "type": "delay", "until": "{{ input.until }}"}]}
    execution_id, _ = post_execution(api, templated, {"until": until})
    done = live.wait(execution_id, timeout=30)
    assert done.status == "failed"
    error = failed_node(done, "wait")
    assert error["type"] == "LimitExceeded", error
    assert fragment in error["message"], error
    assert not Event.objects.filter(execution=done, type="timer_started").exists()
    assert_canary_works(live)


def test_a_ten_stage_pipe_in_a_first_node_answers_201_fast_and_fails_the_node(
    live, api: APIClient
) -> None:
    pipe = "{{ input.x" + STAGE * 10 + " }}"
    definition = {
        "nodes": [{"id": "boom", "type": "function", "function": "std.echo", "input": pipe}]
    }
    execution_id, took = post_execution(api, definition, {"x": 1})
    print(f"\nten-stage pipe: POST /executions answered 201 in {took:.3f}s")
    assert took < scaled(FAST_POST_SECONDS), f"POST /executions took {took:.1f}s"
    done = live.wait(execution_id, timeout=30)
    assert done.status == "failed"
    error = failed_node(done, "boom")
    assert error["type"] == "TemplateError", error
    assert "WORKFLOW_MAX_EXPRESSION_WORK" in error["message"], error
    assert_canary_works(live)


MAP = {
    "nodes": [
        {
            "id": "each",
            "type": "map",
            "items": "input.items",
            "node": {"type": "function", "function": "std.echo", "input": "{{ item }}"},
        }
    ]
}


def test_a_map_over_100001_items_answers_201_fast_and_fails_the_map(live, api) -> None:
    execution_id, took = post_execution(api, MAP, {"items": list(range(100_001))})
    print(f"\nmap over 100,001 items: POST /executions answered 201 in {took:.3f}s")
    assert took < scaled(FAST_POST_SECONDS), f"POST /executions took {took:.1f}s"
    done = live.wait(execution_id, timeout=30)
    assert done.status == "failed"
    error = failed_node(done, "each")
    assert error["type"] == "LimitExceeded", error
    assert "WORKFLOW_MAP_MAX_ITEMS" in error["message"]
    assert "100,001" in error["message"]
    assert not Task.objects.filter(execution=done, node_id__startswith="each[").exists()
    assert_canary_works(live)


def test_a_map_without_max_parallel_starts_at_most_the_default_inside_the_request(
    live, api: APIClient
) -> None:
    execution_id, _ = post_execution(api, MAP, {"items": list(range(100))})
    done = live.wait(execution_id, timeout=90)
    assert done.status == "succeeded", done.error
    assert done.output == {"each": list(range(100))}
    log = events(done)
    first_start = next(e.seq for e in log if e.type == "task_started")
    in_request = [e for e in log if e.type == "task_scheduled" and e.seq < first_start]
    assert len([e for e in in_request if e.node_id.startswith("each[")]) == 32
    in_flight = peak = 0
    for event in log:
        if event.node_id and event.node_id.startswith("each["):
            in_flight += {"task_scheduled": 1, "task_completed": -1}.get(event.type, 0)
            peak = max(peak, in_flight)
    assert peak <= 32


def drip(line: str) -> list[tuple[bytes, float]]:
    head, body = response("200 OK", b"x" * 500, Content_Type="text/plain").split(b"\r\n\r\n")
    return [(head + b"\r\n\r\n", 0), (body, 0.25)]


def test_a_slow_drip_server_is_cut_at_the_nodes_total_deadline(live) -> None:
    with raw_http_server(drip) as server:
        execution = start(
            {
                "nodes": [
                    {
                        "id": "call",
                        "type": "http",
                        "request": {"url": server.url + "/drip"},
                        "timeout_seconds": 1,
                        "retry_policy": {
                            "max_attempts": 2,
                            "initial_interval_seconds": 0.2,
                            "jitter": False,
                        },
                    }
                ]
            }
        )
        done = live.wait(execution.pk, timeout=40)
    assert done.status == "failed"
    # Each attempt ended by the worker itself, at its deadline: a timeout error from the
    # HTTP node, not the sweeper's Timeout after the fact (which would also fire at 1 s).
    results = events(done, node_id="call")
    ended = [e for e in results if e.type in ("task_failed", "task_timed_out")]
    assert len(ended) == 2
    for event in ended:
        started = next(
            e for e in results if e.type == "task_started" and e.attempt == event.attempt
        )
        held = (event.timestamp - started.timestamp).total_seconds()
        assert held < scaled(3.0), f"attempt {event.attempt} held its worker {held:.1f}s"
    failures = [e.data["error"] for e in ended if e.type == "task_failed"]
    assert all(f["type"] == "HTTPConnectionError" and f["timeout"] for f in failures), failures
    assert_canary_works(live)


@pytest.mark.parametrize("value", ["inf", "nan", "1e999", "-7"])
def test_retry_after_of_any_value_is_clamped_and_retried(live, value: str) -> None:
    unavailable = response("503 Service Unavailable", b"later", Retry_After=value)
    with raw_http_server(lambda line: [(unavailable, 0)]) as server:
        execution = start(
            {
                "nodes": [
                    {
                        "id": "call",
                        "type": "http",
                        "request": {"url": server.url + "/busy"},
                        "retry_policy": {
                            "max_attempts": 2,
                            "initial_interval_seconds": 0.2,
                            "max_interval_seconds": 1,
                            "jitter": False,
                        },
                    }
                ]
            }
        )
        # Clamped, the retry comes within a second: ended well inside 20 s (an unclamped
        # Retry-After would wait a day).
        done = live.wait(execution.pk, timeout=20)
    assert done.status == "failed"
    assert len(server.requests) == 2, server.requests
    errors = [e.data["error"] for e in events(done, "task_failed", "call")]
    assert len(errors) == 2
    assert all(e["status_code"] == 503 for e in errors)
    expected = {"inf": 86400.0, "1e999": 86400.0, "-7": 0.0}.get(value)
    assert [e.get("retry_after_seconds") for e in errors] == [expected, expected]
    [retry] = events(done, "task_retry_scheduled", "call")
    assert retry.data["delay_seconds"] <= 1.0
    assert_canary_works(live)


def test_an_overflowing_when_fails_its_node_with_a_template_error(live) -> None:
    """The template layer catches it first: the node fails, nothing reaches the engine's
    error backstop, and the all_done node's failure ends the execution."""
    offender = start(
        {
            "nodes": [
                {
                    "id": "bad",
                    "type": "function",
                    "function": "std.fail",
                    "input": {"message": "first", "retryable": False},
                },
                {
                    "id": "after",
                    "type": "function",
                    "function": "std.echo",
                    "depends_on": ["bad"],
                    "trigger_rule": "all_done",
                    "when": "ceil(`1e999`) == `0`",
                },
            ]
        }
    )
    done = live.wait(offender.pk, timeout=30)
    assert done.status == "failed"
    error = failed_node(done, "after")
    assert error["type"] == "TemplateError", error
    assert "OverflowError" in error["message"], error
    assert not Event.objects.filter(execution=done, type="engine_error").exists()
    assert_canary_works(live)


@contextmanager
def only_worker(live: Engine, **env: str) -> Iterator[Path]:
    """The session's workers replaced by one started with `env` on top, then restored;
    yields the path of its log."""
    saved = live.env
    for worker in list(live.workers):
        live.kill_worker(worker)  # idle between tests: nothing is lost
    live.env = {**saved, **env}
    worker = live.start_worker(concurrency=2)
    try:
        yield live.log_dir / f"worker-{live.counter}.log"
    finally:
        live.kill_worker(worker)
        live.env = saved
        live.start_worker(concurrency=2)


def test_an_attempt_past_its_hard_limit_fails_and_its_worker_slot_is_reclaimed(live) -> None:
    with only_worker(live, WORKFLOW_ATTEMPT_HARD_LIMIT_SECONDS="2") as log:
        # Two stuck attempts take both pool processes: only replaced processes can run more.
        stuck = [
            start({"nodes": [{"id": "stuck", "type": "function", "function": "test.stuck"}]})
            for _ in range(2)
        ]
        for execution in stuck:
            done = live.wait(execution.pk, timeout=60)
            assert done.status == "failed"
            error = failed_node(done, "stuck")
            assert error["type"] == "HardTimeLimit", error
            assert error["retryable"] is False, error
            assert "WORKFLOW_ATTEMPT_HARD_LIMIT_SECONDS" in error["message"], error
            # From its log: 2 s and a 2 s grace, not the function's 600 s.
            (started,) = events(done, "task_started", "stuck")
            (failed,) = events(done, "task_failed", "stuck")
            took = (failed.timestamp - started.timestamp).total_seconds()
            assert took < scaled(20), f"the stuck attempt held its slot {took:.1f}s"
            print(f"\nhard limit 2 s (+2 s grace): the stuck attempt failed after {took:.1f}s")
        assert_canary_works(live)

        # The pool logs a replacement when it reaps the child, which may trail the
        # failure the other process recorded: wait for both, then count exactly.
        def replacements() -> int:
            return log.read_text(errors="replace").count("exited with 'exitcode 70'")

        eventually(lambda: replacements() >= 2, 30, "the pool to replace both stuck processes")
        replaced = replacements()
        assert replaced == 2, f"the pool replaced {replaced} stuck processes, not 2"
