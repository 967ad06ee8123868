"""The container healthchecks (executions/metrics/probe.py) against a real server, broker and beat
heartbeat: healthy when the process works, a reason when it does not."""

from __future__ import annotations

import os
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from executions.beat import heartbeat_path
from executions.metrics.probe import host_header, probe_beat, probe_headers, probe_web, probe_worker


@pytest.mark.parametrize(
    ("allowed", "host"),
    [
        (["wf.example.com", "localhost"], "wf.example.com"),
        ([".example.com"], "example.com"),
        (["*"], "localhost"),
        ([], "localhost"),
    ],
)
def test_the_web_probe_asks_with_a_host_the_settings_allow(allowed, host) -> None:
    assert host_header(allowed) == host


@pytest.mark.django_db(transaction=True)
def test_the_web_probe_passes_the_host_check(live_server, settings) -> None:
    settings.ALLOWED_HOSTS = ["wf.example.com"]
    assert probe_web(urlsplit(live_server.url).port) is None


def test_behind_a_tls_proxy_the_web_probe_says_it_came_through_it(settings) -> None:
    """Else SECURE_SSL_REDIRECT answers the probe's plain HTTP with a 301 (the wheel test
    runs gunicorn with that setting)."""
    settings.ALLOWED_HOSTS = ["wf.example.com"]
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    assert probe_headers() == {
        "Host": "wf.example.com",
        "Accept": "application/json",
        "X-Forwarded-Proto": "https",
    }


def test_the_web_probe_says_why_nothing_answers() -> None:
    # Nothing listens on port 1: refused at once.
    assert "GET /healthz on port 1 failed" in (probe_web(1) or "")


def test_the_worker_probe_names_a_worker_that_does_not_answer() -> None:
    problem = probe_worker("celery@no-such-worker", timeout=0.5)
    assert problem == "worker: celery@no-such-worker did not answer a ping within 0.5s"


def test_the_beat_probe_reads_the_age_of_beats_heartbeat(settings, tmp_path: Path) -> None:
    settings.WORKFLOW_VAR_DIR = tmp_path
    assert "no heartbeat" in (probe_beat() or "")
    heartbeat_path().touch()
    assert probe_beat(max_age=30) is None
    stale = time.time() - 31
    os.utime(heartbeat_path(), (stale, stale))
    assert "last tick 31s ago" in (probe_beat(max_age=30) or "")
