"""The processes under test (3 workers + 1 beat) and the services they depend on, with the
operations the chaos loop performs on them: kill -9 a worker, restart Redis or PostgreSQL."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from scripts import services

ROOT = Path(__file__).resolve().parents[2]


def group_of(pid: int) -> int | None:
    """The process group of `pid`, or None once it is gone (Linux /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[2])


def members(group: int) -> set[int]:
    """Every live process of a process group: a worker's main process and its pool."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit() and group_of(int(entry)) == group:
            found.add(int(entry))
    return found


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen
    started: float = field(default_factory=time.time)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None


@dataclass
class Cluster:
    env: dict[str, str]
    log_dir: Path
    concurrency: int = 2
    workers: list[Proc] = field(default_factory=list)
    beat: Proc | None = None
    #: Every worker ever started, by process group id (= its main pid).
    history: dict[int, Proc] = field(default_factory=dict)
    counter: int = 0

    def _spawn(self, name: str, args: list[str]) -> Proc:
        self.counter += 1
        label = f"{name}-{self.counter}"
        log = open(self.log_dir / f"{label}.log", "wb")  # noqa: SIM115 - the child owns it
        popen = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", *args],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: kill -9 takes the pool too
        )
        log.close()
        return Proc(label, popen)

    def start_worker(self) -> Proc:
        proc = self._spawn(
            "worker",
            [
                "worker",
                "-Q",
                "orchestrator,nodes",
                "--concurrency",
                str(self.concurrency),
                "-n",
                f"chaos{self.counter + 1}@%h",
                "-l",
                "info",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ],
        )
        self.workers.append(proc)
        self.history[proc.pid] = proc
        return proc

    def start_beat(self) -> Proc:
        schedule = self.log_dir / "beat-schedule"
        self.beat = self._spawn("beat", ["beat", "-l", "info", "-s", str(schedule)])
        return self.beat

    def start(self, workers: int) -> None:
        for _ in range(workers):
            self.start_worker()
        self.start_beat()

    def kill(self, proc: Proc) -> None:
        """kill -9 the process group: the main process and its pool at once."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.popen.wait(timeout=30)
        if proc in self.workers:
            self.workers.remove(proc)

    def dead(self) -> list[Proc]:
        """Processes that exited without being killed by us (the caller replaces them)."""
        gone = [w for w in self.workers if not w.alive()]
        for proc in gone:
            self.workers.remove(proc)
        if self.beat is not None and not self.beat.alive():
            gone.append(self.beat)
            self.beat = None
        return gone

    def worker_of(self, pid: int) -> Proc | None:
        """The worker whose pool process is `pid` (only while that process lives)."""
        group = group_of(pid)
        return self.history.get(group) if group is not None else None

    def stop(self) -> None:
        procs = [*self.workers, *([self.beat] if self.beat else [])]
        for proc in procs:
            if proc.alive():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for proc in procs:
            try:
                proc.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.popen.wait(timeout=10)
        self.workers, self.beat = [], None


# --- outages ---------------------------------------------------------------------------


#: Redis restarts in a blink; it stays down this long so that publishing fails meanwhile.
REDIS_DOWN_SECONDS = 2.0


def restart_redis(url: str) -> float:
    """Stop Redis (it keeps nothing: every queued message is lost), leave it down for
    REDIS_DOWN_SECONDS, and start it again. Always restarted, and verified to answer,
    whatever happened. Returns the outage in seconds."""
    target = services.redis_target(url)
    began = time.monotonic()
    try:
        services.stop_redis(target)
        time.sleep(REDIS_DOWN_SECONDS)
    finally:
        services.start_redis(target)
        if not services.redis_ready(target):
            raise services.ServiceError(f"Redis on {target.host}:{target.port} did not return")
    return time.monotonic() - began


def restart_postgres(url: str) -> float:
    """Stop PostgreSQL (fast: every connection is cut) and start it again. Always
    restarted, and verified to answer, whatever happened. Returns the outage in seconds."""
    target = services.pg_target(url)
    began = time.monotonic()
    try:
        services.stop_postgres(target)
    finally:
        services.start_postgres(target)
        if not services.postgres_ready(target):
            raise services.ServiceError(f"PostgreSQL on {target.host}:{target.port} did not return")
    return time.monotonic() - began


def ensure_services(database_url: str, broker_url: str) -> None:
    """Both servers answer (started if not): run first, and last, whatever happened."""
    services.start_postgres(services.pg_target(database_url))
    services.start_redis(services.redis_target(broker_url))
