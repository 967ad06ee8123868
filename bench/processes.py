"""The bench's worker processes: spawned in their own sessions, stopped, and measured (RSS)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from bench.environment import ROOT


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


@dataclass
class Processes:
    env: dict[str, str]
    log_dir: Path
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    def spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.log_dir / f"{name}.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            argv, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        self.procs[name] = proc
        return proc

    def celery(self, name: str, app: str, *args: str) -> subprocess.Popen:
        return self.spawn(name, [sys.executable, "-m", "celery", "-A", app, *args])

    def stop(self, name: str) -> None:
        proc = self.procs.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)

    def stop_all(self) -> None:
        for name in list(self.procs):
            self.stop(name)

    def check(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                tail = (self.log_dir / f"{name}.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{name} exited with {proc.returncode}:\n{tail}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_workers(procs: Processes, queue: str) -> None:
    """The engine's worker and beat, and the raw Celery worker on `queue`, alike."""
    common = ["--concurrency", "2", "--prefetch-multiplier", "1", "-l", "warning",
              "--without-gossip", "--without-mingle", "--without-heartbeat"]  # fmt: skip
    procs.celery("worker", "config", "worker", "-Q", "orchestrator,nodes", "-n",
                 "engine@%h", *common)  # fmt: skip
    procs.celery("beat", "config", "beat", "-l", "warning", "-s",
                 str(procs.log_dir / "beat-schedule"))  # fmt: skip
    procs.celery("raw", "bench.raw_app", "worker", "-Q", queue, "-n", "raw@%h", *common)
