"""Real Celery worker and beat processes against the test database, for integration tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import connection

from executions import store
from executions.definitions import definition_for
from executions.engine.chain import first_break
from executions.engine.statuses import EXECUTION_TERMINAL
from executions.engine.verify import verify
from executions.models import Execution
from executions.projections import differences

ROOT = Path(__file__).resolve().parents[2]
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


@dataclass
class Engine:
    log_dir: Path
    workers: list[subprocess.Popen] = field(default_factory=list)
    beat: subprocess.Popen | None = None
    env: dict[str, str] = field(default_factory=dict)
    counter: int = 0

    def start(self, *, workers: int = 1, concurrency: int = 2, beat: bool = True) -> None:
        self.env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "WORKFLOW_VAR_DIR": str(settings.VAR_DIR),
            "PYTHONPATH": str(ROOT),
            # Test servers live on loopback, which HTTP nodes refuse unless allowed.
            "WORKFLOW_HTTP_ALLOWED_HOSTS": "127.0.0.1,localhost",
            "WORKFLOW_SECRET_API_TOKEN": "s3cr3t-from-env",
            # Searched for in every table, response and log (test_secrets_canary.py).
            "WORKFLOW_SECRET_CANARY": CANARY,
            # The sweeper republishes a lost run_task message this soon (tests wait for it).
            "WORKFLOW_REPUBLISH_AFTER_SECONDS": "2",
        }
        self.purge()
        for _ in range(workers):
            self.start_worker(concurrency=concurrency)
        if beat:
            self.start_beat()

    def start_beat(self) -> subprocess.Popen:
        self.beat = self._spawn(
            "beat", ["beat", "-l", "info", "-s", str(self.log_dir / "beat-schedule")]
        )
        return self.beat

    def stop_beat(self) -> None:
        """Stop the beat (and so the periodic sweeper) until start_beat()."""
        if self.beat is not None:
            os.killpg(self.beat.pid, signal.SIGTERM)
            self.beat.wait(timeout=15)
            self.beat = None

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen:
        self.counter += 1
        log = open(self.log_dir / f"{name}-{self.counter}.log", "wb")  # noqa: SIM115
        return subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", *args],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def start_worker(self, *, concurrency: int = 2) -> subprocess.Popen:
        worker = self._spawn(
            "worker",
            [
                "worker",
                "-l",
                "info",
                "-Q",
                "orchestrator,nodes",
                "--concurrency",
                str(concurrency),
                "-n",
                f"w{self.counter + 1}@%h",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ],
        )
        self.workers.append(worker)
        return worker

    def purge(self) -> None:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "purge",
                "-f",
                "-Q",
                "orchestrator,nodes",
            ],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            timeout=60,
            check=False,
        )

    def kill_worker(self, worker: subprocess.Popen) -> None:
        """kill -9 the worker's whole process group (main process and its children)."""
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=10)
        self.workers.remove(worker)

    def stop(self) -> None:
        for proc in [*self.workers, *([self.beat] if self.beat else [])]:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for proc in [*self.workers, *([self.beat] if self.beat else [])]:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        self.workers, self.beat = [], None

    def logs(self) -> str:
        return "\n".join(
            f"--- {path.name}\n{path.read_text(errors='replace')[-4000:]}"
            for path in sorted(self.log_dir.glob("*.log"))
        )

    def wait(self, execution_id: object, timeout: float = 60.0) -> Execution:
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
