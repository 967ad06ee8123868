"""/metrics counts what real workers did, exactly, whichever web process is scraped.

Real worker processes (a prefork pool of 2) run a workflow with a success, a retry and a
failure for good, and a second one that succeeds; two gunicorn worker processes serve
/metrics, scraped several times over: every count is exact and no scrape counts a unit
of work twice. Counters are labelled by workflow, and each test run makes workflows of
its own names, so the counts are exact whatever else the session's workers ran.
"""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from executions.supervisor import gunicorn_argv, listening
from tests.factories import start
from tests.integration.engine import Engine

FAILING = {
    "nodes": [
        {"id": "ok", "type": "function", "function": "std.echo", "input": {"x": 1}},
        {
            "id": "flaky",
            "type": "function",
            "function": "std.fail",
            "depends_on": ["ok"],
            "input": {"message": "boom", "retryable": True},
            "retry_policy": {
                "max_attempts": 2,
                "initial_interval_seconds": 0.1,
                "jitter": False,
            },
        },
    ]
}
PASSING = {"nodes": [{"id": "only", "type": "function", "function": "std.noop"}]}

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def web(live: Engine) -> Iterator[str]:
    """Two gunicorn worker processes serving the API (and /metrics without a token)."""
    port = free_port()
    env = {**live.env, "WORKFLOW_METRICS_PUBLIC": "1"}
    process = live.supervisor.start(
        "gunicorn", gunicorn_argv(port, workers=2), env=env, ready=listening("127.0.0.1", port)
    )
    try:
        process.wait_ready()
        yield f"http://127.0.0.1:{port}/metrics"
    finally:
        live.supervisor.stop(process)


def scrape(url: str) -> Samples:
    with urllib.request.urlopen(url, timeout=30) as response:
        text = response.read().decode()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_counts_are_exact_across_workers_and_web_processes(live: Engine, web: str) -> None:
    failing = live.wait(start(FAILING).pk)
    passing = live.wait(start(PASSING).pk)
    assert failing.status == "failed", failing.error
    assert passing.status == "succeeded", passing.error
    bad, good = failing.workflow.name, passing.workflow.name
    fn = {"node_type": "function"}

    # Several scrapes, served by either gunicorn process: the same, exact numbers.
    scrapes = [scrape(web) for _ in range(4)]
    for samples in scrapes:
        assert value(samples, "workflows_started_total", workflow=bad) == 1
        assert value(samples, "workflows_failed_total", workflow=bad) == 1
        assert value(samples, "workflows_completed_total", workflow=bad) == 0
        assert value(samples, "workflows_started_total", workflow=good) == 1
        assert value(samples, "workflows_completed_total", workflow=good) == 1
        assert value(samples, "workflows_failed_total", workflow=good) == 0
        assert value(samples, "task_retry_total", workflow=bad, **fn) == 1
        assert value(samples, "task_retry_total", workflow=good, **fn) == 0
        finished = "task_attempts_finished_total"
        assert value(samples, finished, workflow=bad, result="succeeded", **fn) == 1
        assert value(samples, finished, workflow=bad, result="failed", **fn) == 2
        assert value(samples, finished, workflow=good, result="succeeded", **fn) == 1
        assert value(samples, "tasks_running", workflow=bad, **fn) == 0
        # Three attempts ran in the failing workflow (ok, flaky #1, flaky #2), one in the other.
        for histogram in ("task_duration_seconds", "task_queue_wait_seconds"):
            assert value(samples, f"{histogram}_count", workflow=bad, **fn) == 3
            assert value(samples, f"{histogram}_bucket", workflow=bad, le="+Inf", **fn) == 3
            assert value(samples, f"{histogram}_count", workflow=good, **fn) == 1
            assert value(samples, f"{histogram}_sum", workflow=bad, **fn) >= 0
    # No scrape counts a unit twice: this test's series are the same in every scrape.
    for key in scrapes[0].keys() | scrapes[-1].keys():
        if dict(key[1]).get("workflow") in (bad, good):
            assert {samples.get(key) for samples in scrapes} == {scrapes[0].get(key)}, key
