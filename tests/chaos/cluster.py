"""The processes under test (3 workers + 1 beat) and the services they depend on, with the
operations the chaos loop performs on them: kill -9 a worker, restart Redis or PostgreSQL."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from executions.supervisor import Process, Supervisor, beat_argv, group_of, worker_argv
from scripts import services

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Cluster:
    env: dict[str, str]
    log_dir: Path
    concurrency: int = 2
    workers: list[Process] = field(default_factory=list)
    beat: Process | None = None
    #: Every worker ever started, by process group id (= its main pid).
    history: dict[int, Process] = field(default_factory=dict)
    supervisor: Supervisor = field(init=False)

    def __post_init__(self) -> None:
        self.supervisor = Supervisor(self.log_dir, self.env)

    def start_worker(self) -> Process:
        name = self.supervisor.numbered("worker")
        argv = worker_argv(name=f"chaos{self.supervisor.counter}@%h", concurrency=self.concurrency)
        proc = self.supervisor.start(name, argv)
        self.workers.append(proc)
        self.history[proc.pid] = proc
        return proc

    def start_beat(self) -> Process:
        schedule = self.log_dir / "beat-schedule"
        self.beat = self.supervisor.start(
            self.supervisor.numbered("beat"), beat_argv(schedule=schedule)
        )
        return self.beat

    def start(self, workers: int) -> None:
        for _ in range(workers):
            self.start_worker()
        self.start_beat()

    def kill(self, proc: Process) -> None:
        """kill -9 the process group: the main process and its pool at once."""
        self.supervisor.kill(proc)
        if proc in self.workers:
            self.workers.remove(proc)

    def dead(self) -> list[Process]:
        """Processes that exited without being killed by us (the caller replaces them)."""
        gone = self.supervisor.dead()
        self.workers = [w for w in self.workers if w not in gone]
        if self.beat in gone:
            self.beat = None
        return gone

    def worker_of(self, pid: int) -> Process | None:
        """The worker whose pool process is `pid` (only while that process lives)."""
        group = group_of(pid)
        return self.history.get(group) if group is not None else None

    def stop(self) -> None:
        self.supervisor.stop(timeout=20)
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
