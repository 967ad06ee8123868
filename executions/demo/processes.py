"""The demo's child processes (web, worker, beat): started, watched, and stopped."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from django.conf import settings


class Stop(Exception):
    """SIGTERM or SIGHUP arrived."""


class ChildDied(Exception):
    def __init__(self, child: Child):
        super().__init__(f"{child.name} exited with code {child.proc.returncode}")
        self.child = child


class Child:
    """A child process in its own session (Ctrl-C reaches only us), logging to a file."""

    def __init__(self, name: str, argv: list[str], log_dir: Path):
        self.name = name
        self.argv = argv
        self.log_path = log_dir / f"{name}.log"
        self.proc: subprocess.Popen | None = None

    def start(self, env: dict[str, str]) -> None:
        with open(self.log_path, "w") as log:
            log.write(f"# {datetime.now().isoformat(timespec='seconds')}  {' '.join(self.argv)}\n")
            log.flush()
            self.proc = subprocess.Popen(
                self.argv,
                cwd=settings.BASE_DIR,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def signal_group(self, sig: int) -> bool:
        """Send `sig` to the child's whole process group (celery's pool included)."""
        if self.proc is None:
            return False
        try:
            os.killpg(self.proc.pid, sig)
            return True
        except (ProcessLookupError, PermissionError):
            return False


def port_in_use(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def demo_children(host: str, port: int, log_dir: Path) -> list[Child]:
    python = sys.executable
    manage = str(Path(settings.BASE_DIR) / "manage.py")
    celery = [python, "-m", "celery", "-A", "config"]
    worker = ["worker", "-l", "warning", "--concurrency", "2", "-Q", "orchestrator,nodes"]
    return [
        # --insecure: serve the admin's static files although DEBUG is off.
        Child(
            "web",
            [python, manage, "runserver", f"{host}:{port}", "--noreload", "--insecure"],
            log_dir,
        ),
        Child("worker", [*celery, *worker], log_dir),
        Child("beat", [*celery, "beat", "-l", "warning"], log_dir),
    ]


class Supervisor:
    """The children of one demo run; `out` prints a line of progress."""

    def __init__(self, out: Callable[[str], None]):
        self.out = out
        self.children: list[Child] = []

    def start(self, host: str, port: int) -> None:
        log_dir = Path(settings.VAR_DIR) / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        self.children = demo_children(host, port, log_dir)
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        for child in self.children:
            child.start(env)
        names = ", ".join(f"{c.name} (pid {c.proc.pid})" for c in self.children)
        self.out(f"Started {names}; logs in {log_dir}/")

    def check(self) -> None:
        for child in self.children:
            if not child.alive():
                raise ChildDied(child)

    def stop(self) -> None:
        running = [c for c in self.children if c.alive()]
        if not running:
            return
        stopping = time.monotonic()
        self.out("Stopping " + ", ".join(c.name for c in running) + " …")
        for child in running:
            child.proc.terminate()  # the leader only: celery stops its own pool
        deadline = time.monotonic() + 15.0
        try:
            while time.monotonic() < deadline and any(c.alive() for c in running):
                time.sleep(0.1)
        except (KeyboardInterrupt, Stop):
            pass  # a second Ctrl-C: don't wait any longer
        for child in self.children:
            # SIGKILL whatever is left in each group (a leader that hung, orphaned pool
            # processes); a group with no process left answers ProcessLookupError.
            child.signal_group(signal.SIGKILL)
            if child.proc is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.proc.wait(timeout=5)
        self.out(f"Stopped ({time.monotonic() - stopping:.1f}s).")
