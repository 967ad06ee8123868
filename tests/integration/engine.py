"""Real Celery worker and beat processes against the test database, for integration tests."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from uuid import UUID

from django.conf import settings
from django.db import connection

from executions import store
from executions.definitions import definition_for
from executions.engine.chain import first_break
from executions.engine.statuses import EXECUTION_TERMINAL
from executions.engine.verify import verify
from executions.models import Attempt, Execution, Task
from executions.projections import differences
from executions.supervisor import (
    WORKER_READY,
    Process,
    Supervisor,
    beat_argv,
    environment,
    logged,
    purge,
    worker_argv,
)

#: A secret the workers hold and nothing may ever record (URL-safe: no encoded forms).
CANARY = "cAnArY-5e1f0a9c7b3d"


def database_url() -> str:
    """A URL for the database this test process uses (pytest-django's test database)."""
    db = connection.settings_dict
    if db["ENGINE"] == "django.db.backends.sqlite3":
        return f"sqlite:///{db['NAME']}"
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    host = f"{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}"
    return f"postgres://{user}{password}@{host}/{db['NAME']}"


def assert_replayable(execution: Execution) -> None:
    """Every execution the integration tests see ending is checked like `--verify` would:
    contiguous seqs, every decision re-derived, and projections equal to the folded log."""
    rows = list(store.events_of(execution.pk))
    assert [row.seq for row in rows] == list(range(1, len(rows) + 1)), "gap in the log"
    divergence = verify(
        definition_for(execution.version_id),
        [store.to_engine(row) for row in rows],
        execution_id=str(execution.pk),
    )
    assert divergence is None, str(divergence)
    drift = differences(execution, store.state_at(execution.pk))
    assert drift == [], f"projection differs from the log: {drift}"


def wait_for(execution: Execution, node_id: str, status: str, timeout: float = 30) -> None:
    """Poll until the node's task has `status` (a real worker or the orchestrator put it there)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if Task.objects.filter(execution=execution, node_id=node_id, status=status).exists():
            return
        time.sleep(0.05)
    raise AssertionError(f"{node_id} never {status}")


@dataclass
class Engine:
    """The session's workers and beat (tests replace and kill them through this)."""

    log_dir: Path
    workers: list[Process] = field(default_factory=list)
    beat: Process | None = None
    env: dict[str, str] = field(default_factory=dict)
    supervisor: Supervisor = field(init=False)

    def __post_init__(self) -> None:
        self.supervisor = Supervisor(self.log_dir)

    @property
    def counter(self) -> int:
        """The number in the name (and log file) of the process started last."""
        return self.supervisor.counter

    def start(self, *, workers: int = 1, concurrency: int = 2, beat: bool = True) -> None:
        self.env = environment(
            DATABASE_URL=database_url(),
            CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
            WORKFLOW_VAR_DIR=str(settings.VAR_DIR),
            # Test servers live on loopback, which HTTP nodes refuse unless allowed.
            WORKFLOW_HTTP_ALLOWED_HOSTS="127.0.0.1,localhost",
            WORKFLOW_SECRET_API_TOKEN="s3cr3t-from-env",
            # Searched for in every table, response and log (test_secrets_canary.py).
            WORKFLOW_SECRET_CANARY=CANARY,
            # The sweeper republishes a lost run_task message this soon (tests wait for it).
            WORKFLOW_REPUBLISH_AFTER_SECONDS="2",
        )
        purge(self.env)
        for _ in range(workers):
            self.start_worker(concurrency=concurrency)
        if beat:
            self.start_beat()

    def start_beat(self) -> Process:
        schedule = self.log_dir / "beat-schedule"
        name = self.supervisor.numbered("beat")
        self.beat = self.supervisor.start(name, beat_argv(schedule=schedule), env=self.env)
        return self.beat

    def stop_beat(self) -> None:
        """Stop the beat (and so the periodic sweeper) until start_beat()."""
        if self.beat is not None:
            self.supervisor.stop(self.beat)
            self.beat = None

    def start_worker(self, *, concurrency: int = 2) -> Process:
        """A worker consuming its queues (waited for: a test's first message is not
        left to whichever worker happens to be up)."""
        name = self.supervisor.numbered("worker")
        argv = worker_argv(name=f"w{self.counter}@%h", concurrency=concurrency)
        worker = self.supervisor.start(name, argv, env=self.env, ready=logged(WORKER_READY))
        worker.wait_ready()
        self.workers.append(worker)
        return worker

    def kill_worker(self, worker: Process) -> None:
        """kill -9 the worker's whole process group (main process and its pool)."""
        self.supervisor.kill(worker)
        self.workers.remove(worker)

    def worker_holding(self, attempt: Attempt) -> Process:
        """The worker whose pool process claimed the attempt (worker ids are host:pid:thread;
        a pool process is in its worker's process group)."""
        assert attempt.worker_id, f"attempt {attempt.pk} is not claimed"
        pid = int(attempt.worker_id.split(":")[1])
        (holder,) = [w for w in self.workers if os.getpgid(pid) == w.pid]
        return holder

    def stop(self) -> None:
        self.supervisor.stop()
        self.workers, self.beat = [], None

    def logs(self) -> str:
        return self.supervisor.logs()

    def wait(self, execution_id: UUID | str, timeout: float = 60.0) -> Execution:
        """Poll until the execution ends; fail with the worker logs if it does not."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            execution = Execution.objects.get(pk=execution_id)
            if execution.status in EXECUTION_TERMINAL:
                assert_replayable(execution)
                # Real workers wrote it: every hash must chain (tests/api forge logs too).
                found = first_break(
                    store.linked_events(execution.pk), last_hash=execution.last_hash
                )
                assert found is None, str(found)
                return execution
            time.sleep(0.1)
        raise AssertionError(
            f"execution {execution_id} still {execution.status} after {timeout}s\n{self.logs()}"
        )
