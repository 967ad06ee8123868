"""Real Celery worker and beat processes against the test database, for integration tests."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from executions.definitions import definition_for
from executions.engine.chain import first_break
from executions.engine.statuses import EXECUTION_TERMINAL
from executions.engine.verify import verify
from executions.kernel.log import events_of, linked_events, state_at, to_engine
from executions.kernel.projections import differences
from executions.messages import attempt_name, workflow_name
from executions.models import Attempt, Execution, Task, Timer
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
from executions.tasks import sweep
from tests.integration import worker_logs
from tests.waiting import eventually

#: The sweeper's Celery task, as the workers' logs name it.
SWEEP = "executions.tasks.sweep"

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
    rows = list(events_of(execution.pk))
    assert [row.seq for row in rows] == list(range(1, len(rows) + 1)), "gap in the log"
    divergence = verify(
        definition_for(execution.version_id),
        [to_engine(row) for row in rows],
        execution_id=str(execution.pk),
    )
    assert divergence is None, str(divergence)
    drift = differences(execution, state_at(execution.pk))
    assert drift == [], f"projection differs from the log: {drift}"


def operator_client() -> APIClient:
    """An API client of a fresh superuser (tests share the database: a unique name)."""
    user = get_user_model().objects.create_superuser(f"op-{uuid4().hex[:8]}")
    client = APIClient()
    client.force_authenticate(user)
    return client


def wait_for(execution: Execution, node_id: str, status: str, timeout: float = 30) -> None:
    """Poll until the node's task has `status` (a real worker or the orchestrator put it there)."""
    eventually(
        lambda: Task.objects.filter(execution=execution, node_id=node_id, status=status).exists(),
        timeout,
        f"{node_id} never {status}",
    )


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

    def task_lines(
        self, *mentioning: str, running_only: bool = False
    ) -> list[worker_logs.TaskLine]:
        """Celery's records about the tasks these texts name (a name, an id), from every
        worker's log (or the running workers')."""
        workers = [w.log_path for w in self.workers]
        paths = workers if running_only else sorted(self.log_dir.glob("worker-*.log"))
        return worker_logs.task_lines(paths, mentioning)

    def records(self, execution_id: UUID | str) -> list[dict[str, Any]]:
        """The workers' log records tagged with this execution (the runtime's own)."""
        paths = sorted(self.log_dir.glob("worker-*.log"))
        logged = worker_logs.records(paths, [str(execution_id)])
        return [r for r in logged if r.get("execution_id") == str(execution_id)]

    def succeeded(self, name: str, args: tuple[Any, ...]) -> int:
        """How many Celery tasks `name` called with `args` ran to their end on a worker."""
        return sum(
            1
            for line in self.task_lines(name)
            if (line.outcome, line.name, line.args) == ("succeeded", name, repr(args))
        )

    def timer_ran(self, timer: Timer) -> None:
        """Until the timer is due and its own fire_timer message has run on a worker (and
        fired it, or found it not to fire: a paused execution, say)."""
        eventually(lambda: timezone.now() > timer.due_at, 30, "the timer never came due")
        eventually(
            lambda: self.succeeded("executions.tasks.fire_timer", (timer.pk,)),
            30,
            "the timer's message never ran",
        )

    def taken(self, execution: Execution, node_id: str, attempt: int = 1) -> int:
        """How many run_task messages for this attempt the workers took: 1 unless it was
        republished or delivered twice."""
        name = attempt_name(workflow_name(execution.workflow_id), node_id, attempt)
        return len(worker_logs.ids(self.task_lines(name), {"received"}, name))

    def message_over(self, execution: Execution, node_id: str, attempt: int = 1) -> None:
        """Until the run_task message that ran this attempt has returned on its worker:
        nothing that message's task does can still be under way. For an attempt that had a
        message of its own, not one a worker claimed straight after another's."""
        name = attempt_name(workflow_name(execution.workflow_id), node_id, attempt)
        eventually(
            lambda: worker_logs.ids(self.task_lines(name), worker_logs.OVER, name),
            60,
            f"the run_task message of {name} never returned",
        )

    def ran(self, task_ids: Iterable[str], timeout: float = 60.0) -> None:
        """Until every one of these Celery task ids has run to its end on some worker."""
        wanted = set(task_ids)
        eventually(
            lambda: wanted <= worker_logs.ids(self.task_lines(*wanted), {"succeeded"}),
            timeout,
            f"{len(wanted)} Celery tasks were not all run by the workers",
        )

    def swept(self, timeout: float = 60.0) -> None:
        """One sweep sent now and run to its end by a worker: whatever the sweeper would do
        to the rows as they are now, it has had its chance to (the proof a check that
        something did NOT happen needs, where waiting for beat's next ticks is a guess)."""
        task_id = str(uuid4())
        sweep.apply_async(task_id=task_id)
        self.ran([task_id], timeout)

    def sweeps_settled(self, timeout: float = 60.0) -> None:
        """After stop_beat: every sweep the beat queued is over, none runs any more. A sweep
        sent now leaves the queue after them, so once it has run each of theirs has been
        taken by a worker; then each one a running worker took must be over (a killed
        worker's never will be, nor will it run again)."""
        self.swept(timeout)

        def unfinished() -> set[str]:
            lines = self.task_lines(SWEEP, running_only=True)
            return worker_logs.ids(lines, {"received"}, SWEEP) - worker_logs.ids(
                lines, worker_logs.OVER, SWEEP
            )

        eventually(lambda: not unfinished(), timeout, lambda: f"sweeps still on: {unfinished()}")

    def wait(self, execution_id: UUID | str, timeout: float = 60.0) -> Execution:
        """Poll until the execution ends; fail with the worker logs if it does not."""

        def ended() -> Execution | None:
            execution = Execution.objects.get(pk=execution_id)
            return execution if execution.status in EXECUTION_TERMINAL else None

        def still() -> str:
            status = Execution.objects.get(pk=execution_id).status
            return f"execution {execution_id} still {status}\n{self.logs()}"

        execution = eventually(ended, timeout, still, interval=0.1)
        assert_replayable(execution)
        # Real workers wrote it: every hash must chain (tests/api forge logs too).
        found = first_break(linked_events(execution.pk), last_hash=execution.last_hash)
        assert found is None, str(found)
        return execution
