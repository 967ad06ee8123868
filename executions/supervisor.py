"""One supervisor for the engine's processes: Celery workers and beat, and the web server.

The demo (run_demo), the benchmarks, the chaos run and the integration tests all start
their children here. Each child runs in a session of its own, so its process group is its
main process plus its pool: one kill -9 takes them all (chaos), and a Ctrl-C in the
terminal reaches only the parent. Each child logs to <log_dir>/<name>.log.

No Django here: callers start children before Django is configured, or without it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUEUES = "orchestrator,nodes"
#: Worker-to-worker broker chatter the engine never uses; without it a worker starts and
#: stops faster, and a killed worker leaves nothing behind for the others to wait on.
QUIET = ("--without-gossip", "--without-mingle", "--without-heartbeat")
#: What a Celery worker logs (at level info) once it consumes its queues.
WORKER_READY = " ready."


# --- command lines and environment ---------------------------------------------------


def celery_argv(*args: str, app: str = "config") -> list[str]:
    return [sys.executable, "-m", "celery", "-A", app, *args]


def worker_argv(
    *,
    name: str | None = None,
    concurrency: int = 2,
    queues: str = QUEUES,
    loglevel: str = "info",
    app: str = "config",
    extra: Iterable[str] = (),
) -> list[str]:
    named = ["-n", name] if name else []
    options = ["-Q", queues, "--concurrency", str(concurrency), "-l", loglevel, *named]
    return celery_argv("worker", *options, *QUIET, *extra, app=app)


def beat_argv(*, schedule: Path | None = None, loglevel: str = "info") -> list[str]:
    # The schedule lives in the database (django-celery-beat); -s only places beat's own
    # state file, which otherwise lands in the working directory.
    state = ["-s", str(schedule)] if schedule is not None else []
    return celery_argv("beat", "-l", loglevel, *state)


def web_argv(host: str, port: int) -> list[str]:
    """Django's server (the demo); WhiteNoise serves the static files (config/staticfiles.py)."""
    return [sys.executable, str(ROOT / "manage.py"), "runserver", f"{host}:{port}", "--noreload"]


def gunicorn_argv(port: int, *, workers: int = 2) -> list[str]:
    bind = f"127.0.0.1:{port}"
    return [sys.executable, "-m", "gunicorn", "config.wsgi", "-w", str(workers), "-b", bind,
            "--log-level", "warning"]  # fmt: skip


def environment(base: Mapping[str, str] | None = None, **settings: str | None) -> dict[str, str]:
    """The children's environment: `base` (default os.environ) with the project importable,
    output unbuffered (logs are read while the child runs), and `settings` on top (None
    removes a variable)."""
    env = {**(os.environ if base is None else base), "PYTHONPATH": str(ROOT)}
    env["PYTHONUNBUFFERED"] = "1"
    for key, value in settings.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def purge(env: Mapping[str, str], queues: str = QUEUES) -> None:
    """Drop the queued messages (a previous run's) before workers start."""
    subprocess.run(
        celery_argv("purge", "-f", "-Q", queues),
        cwd=ROOT, env=dict(env), capture_output=True, timeout=60, check=False,
    )  # fmt: skip


# --- processes -----------------------------------------------------------------------


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now (the OS picks it), for a child to bind."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def group_of(pid: int) -> int | None:
    """The process group of `pid`, or None once it is gone (Linux /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[2])


def members(group: int) -> set[int]:
    """Every live process of a process group: a worker's main process and its pool."""
    return {int(e) for e in os.listdir("/proc") if e.isdigit() and group_of(int(e)) == group}


class ProcessDied(RuntimeError):
    def __init__(self, process: Process):
        super().__init__(f"{process.name} exited with code {process.returncode}")
        self.process = process


@dataclass(eq=False)
class Process:
    name: str
    argv: list[str]
    popen: subprocess.Popen
    log_path: Path
    #: Whether the child is ready for work (None: as soon as it runs).
    ready: Callable[[Process], bool] | None = None
    started: float = field(default_factory=time.time)

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        return self.popen.returncode

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log().splitlines()[-lines:]) or "(empty log)"

    def signal_group(self, sig: int) -> bool:
        """`sig` to the whole group; False when no process of it is left."""
        try:
            os.killpg(self.pid, sig)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while self.ready is not None and not self.ready(self):
            if not self.alive():
                raise ProcessDied(self)
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name} not ready after {timeout:.0f}s:\n{self.tail()}")
            time.sleep(0.1)


def logged(text: str) -> Callable[[Process], bool]:
    """Ready once the child's log shows `text`."""
    return lambda process: text in process.log()


def listening(host: str, port: int) -> Callable[[Process], bool]:
    return lambda process: port_open(host, port)


@dataclass
class Supervisor:
    log_dir: Path
    env: dict[str, str] = field(default_factory=environment)
    cwd: Path = ROOT
    #: The children started and not yet stopped or reaped, in start order.
    running: list[Process] = field(default_factory=list)
    #: How many children were started: numbers their names (worker-3.log).
    counter: int = 0

    def __post_init__(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)

    def numbered(self, kind: str) -> str:
        self.counter += 1
        return f"{kind}-{self.counter}"

    def start(
        self,
        name: str,
        argv: list[str],
        *,
        env: Mapping[str, str] | None = None,
        ready: Callable[[Process], bool] | None = None,
    ) -> Process:
        log_path = self.log_dir / f"{name}.log"
        with open(log_path, "w") as log:
            # The log's header is for a person at this machine: local wall-clock time on purpose.
            stamp = datetime.now().isoformat(timespec="seconds")  # noqa: DTZ005
            log.write(f"# {stamp}  {' '.join(argv)}\n")
            log.flush()
            popen = subprocess.Popen(
                argv, cwd=self.cwd, env=dict(self.env if env is None else env),
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        process = Process(name, argv, popen, log_path, ready)
        self.running.append(process)
        return process

    def __getitem__(self, name: str) -> Process:
        for process in self.running:
            if process.name == name:
                return process
        raise KeyError(f"no running process named {name!r}")

    def kill(self, process: Process) -> None:
        """kill -9 the process group: the main process and its pool at once."""
        process.signal_group(signal.SIGKILL)
        process.popen.wait(timeout=30)
        self._forget([process])

    def stop(self, *processes: Process | str, timeout: float = 15.0) -> None:
        """Stop `processes` (default: all): SIGTERM to each main process, which stops its
        own pool (Celery's warm shutdown, gunicorn's graceful one), then SIGKILL to every
        group when the time is up, for a main process that hung or a pool it orphaned."""
        named = {p.name: p for p in self.running}
        found = [named.get(p) if isinstance(p, str) else p for p in processes or self.running]
        chosen = [p for p in found if p is not None]  # a name not running: nothing to stop
        for process in chosen:
            if process.alive():
                process.popen.terminate()
        deadline = time.monotonic() + timeout
        with contextlib.suppress(KeyboardInterrupt):  # a second Ctrl-C: wait no longer
            while time.monotonic() < deadline and any(p.alive() for p in chosen):
                time.sleep(0.05)
        for process in chosen:
            process.signal_group(signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.popen.wait(timeout=5)
        self._forget(chosen)

    def dead(self) -> list[Process]:
        """Children that exited on their own since the last call (no longer running)."""
        gone = [p for p in self.running if not p.alive()]
        self._forget(gone)
        return gone

    def check(self) -> None:
        """Raise ProcessDied for a child that exited on its own."""
        for process in self.running:
            if not process.alive():
                raise ProcessDied(process)

    def logs(self, chars: int = 4000) -> str:
        return "\n".join(
            f"--- {path.name}\n{path.read_text(errors='replace')[-chars:]}"
            for path in sorted(self.log_dir.glob("*.log"))
        )

    def _forget(self, processes: list[Process]) -> None:
        self.running = [p for p in self.running if p not in processes]
