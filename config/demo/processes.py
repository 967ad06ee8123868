"""The demo's children (web, worker, beat), started by executions.supervisor."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from django.conf import settings

from executions.supervisor import (
    Process,
    ProcessDied,
    Supervisor,
    beat_argv,
    environment,
    web_argv,
    worker_argv,
)

__all__ = ["DemoProcesses", "ProcessDied", "Stop"]


class Stop(Exception):
    """SIGTERM or SIGHUP arrived."""


class DemoProcesses:
    """The children of one demo run; `out` prints a line of progress."""

    def __init__(self, out: Callable[[str], None]):
        self.out = out
        # Logs for a person reading var/logs/ (workflows/logs.py), unless asked otherwise.
        plain = environment(WORKFLOW_LOG_FORMAT=os.environ.get("WORKFLOW_LOG_FORMAT", "plain"))
        self.supervisor = Supervisor(Path(settings.VAR_DIR) / "logs", plain)

    @property
    def children(self) -> list[Process]:
        return self.supervisor.running

    def start(self, host: str, port: int) -> None:
        quiet = "warning"
        started = [
            self.supervisor.start("web", web_argv(host, port)),
            self.supervisor.start("worker", worker_argv(loglevel=quiet)),
            self.supervisor.start("beat", beat_argv(loglevel=quiet)),
        ]
        names = ", ".join(f"{p.name} (pid {p.pid})" for p in started)
        self.out(f"Started {names}; logs in {self.supervisor.log_dir}/")

    def check(self) -> None:
        self.supervisor.check()

    def stop(self) -> None:
        running = [p for p in self.children if p.alive()]
        if running:
            began = time.monotonic()
            self.out("Stopping " + ", ".join(p.name for p in running) + " …")
        try:
            self.supervisor.stop()  # also reaps a child that died on its own
        except Stop:  # a second signal: wait no longer
            self.supervisor.stop(timeout=0)
        if running:
            self.out(f"Stopped ({time.monotonic() - began:.1f}s).")
