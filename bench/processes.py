"""The bench's processes (started by executions.supervisor) and what it measures of them."""

from __future__ import annotations

import contextlib
import os
import socket
from typing import Any

from executions.supervisor import Supervisor, beat_argv, worker_argv


def rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return 0
    return 0


def children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found += [int(x) for x in handle.read().split()]
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_workers(procs: Supervisor, queue: str) -> None:
    """The engine's worker and beat, and the raw Celery worker on `queue`, alike."""
    common: dict[str, Any] = {
        "concurrency": 2,
        "loglevel": "warning",
        "extra": ["--prefetch-multiplier", "1"],
    }
    procs.start("worker", worker_argv(name="engine@%h", **common))
    procs.start("beat", beat_argv(schedule=procs.log_dir / "beat-schedule", loglevel="warning"))
    procs.start("raw", worker_argv(name="raw@%h", queues=queue, app="bench.raw_app", **common))
