"""The chaos monkey: a thread that kill -9s a random worker every few seconds (and starts a
replacement), restarts Redis once and PostgreSQL once, and restarts any process that died
on its own. After each restart it checks that the processes that lived through it still
work (Celery reconnects to the broker; Django, with CONN_HEALTH_CHECKS, to the database)."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import connection
from django.utils import timezone

from executions.models import Event
from executions.supervisor import Process, members
from tests.chaos.cluster import Cluster, restart_postgres, restart_redis
from tests.chaos.common import db, say

#: After a restart, how long the processes that lived through it get to show they work.
PROOF_SECONDS = 60.0
#: Seconds between the Redis and the PostgreSQL restart at least.
OUTAGE_SPACING = 10.0


class Monkey(threading.Thread):
    def __init__(
        self,
        cluster: Cluster,
        kill_every: tuple[float, float],
        rng: random.Random,
        database: str,
        broker: str,
        workers: int = 3,
    ):
        super().__init__(name="chaos-monkey", daemon=True)
        self.cluster, self.kill_every, self.rng = cluster, kill_every, rng
        self.database, self.broker, self.size = database, broker, workers
        self.stop = threading.Event()
        #: Fraction of the executions submitted so far (set by the campaign).
        self.progress: Callable[[], float] = lambda: 0.0
        self.kills = 0
        #: Processes (worker main and pool) that died by our kill -9: their attempts time out.
        self.killed_pids: set[int] = set()
        self.deaths: list[dict[str, Any]] = []
        self.outages: dict[str, list[dict[str, Any]]] = {"redis": [], "postgres": []}
        self.error: BaseException | None = None
        #: Restart Redis and PostgreSQL once each.
        self.restarts = True
        self._began = time.monotonic()
        self._last_outage = 0.0

    def outages_done(self) -> bool:
        return not self.restarts or all(self.outages.values())

    def summary(self) -> dict[str, Any]:
        return {"kills": self.kills, "deaths": self.deaths, **self.outages}

    def run(self) -> None:
        next_kill = time.monotonic() + self.rng.uniform(*self.kill_every)
        try:
            while not self.stop.wait(0.5):
                self.supervise()
                due = self._due_outage()
                if due is not None:
                    self.outage(*due)
                elif time.monotonic() >= next_kill:
                    self.kill_one()
                    next_kill = time.monotonic() + self.rng.uniform(*self.kill_every)
        except BaseException as exc:  # reported by the campaign
            self.error = exc
        finally:
            connection.close()

    def _due_outage(self) -> tuple[str, Callable[[str], float], str] | None:
        """Redis once a quarter of the executions are in, PostgreSQL past half of them."""
        if not self.restarts:
            return None
        if not self.outages["redis"]:
            if self.progress() >= 0.25 and self._t() >= 8:
                return "redis", restart_redis, self.broker
        elif not self.outages["postgres"]:
            spaced = time.monotonic() - self._last_outage >= OUTAGE_SPACING
            if spaced and self.progress() >= 0.55:
                return "postgres", restart_postgres, self.database
        return None

    def _t(self) -> float:
        return round(time.monotonic() - self._began, 1)

    def kill_one(self) -> None:
        if not self.cluster.workers:
            return
        victim = self.rng.choice(self.cluster.workers)
        self.killed_pids |= members(victim.pid)
        self.cluster.kill(victim)
        self.kills += 1
        self.cluster.start_worker()

    def supervise(self) -> list[Process]:
        """Replace processes that exited on their own, and record that they did."""
        gone = self.cluster.dead()
        for proc in gone:
            self.deaths.append(
                {"process": proc.name, "exit": proc.popen.returncode, "at": self._t()}
            )
            say(f"{proc.name} exited on its own ({proc.popen.returncode}); replacing it")
            if proc.name.startswith("beat"):
                self.cluster.start_beat()
        while len(self.cluster.workers) < self.size:
            self.cluster.start_worker()
        return gone

    def outage(self, service: str, restart: Callable[[str], float], url: str) -> None:
        workers = list(self.cluster.workers)
        beat = self.cluster.beat
        sent_before = _beat_sends(self.cluster, beat)
        say(f"t={self._t()}s restarting {service}")
        at, began = self._t(), timezone.now()
        seconds = restart(url)
        ended = timezone.now()
        self._last_outage = time.monotonic()
        survivors = [w for w in workers if w.alive()]
        worked = self._worked_after(survivors, ended)
        time.sleep(max(0.0, 3 - (time.monotonic() - self._last_outage)))  # a few beats
        record = {
            "at": at,
            "from": began,
            "to": ended,
            "outage_seconds": round(seconds, 2),
            "workers_before": len(workers),
            "workers_survived": len(survivors),
            "survivors_that_worked_after": len(worked),
            "beat_survived": beat is not None and beat.alive(),
            "beat_sent_tasks_after": _beat_sends(self.cluster, beat) > sent_before,
            "died": [p.name for p in self.supervise()],
        }
        self.outages[service].append(record)
        say(f"{service} back after {seconds:.1f}s: {record}")

    def _worked_after(self, survivors: list[Process], since: datetime) -> set[str]:
        """Survivors that appended a task_started after `since` (within PROOF_SECONDS)."""
        worked: set[str] = set()
        deadline = time.monotonic() + PROOF_SECONDS
        while time.monotonic() < deadline and len(worked) < len(survivors):
            for data in db(
                lambda: list(
                    Event.objects.filter(type="task_started", timestamp__gt=since).values_list(
                        "data", flat=True
                    )
                )
            ):
                pid = int(str(data.get("worker", "::")).split(":")[1] or 0)
                proc = self.cluster.worker_of(pid) if pid else None
                if proc is not None and proc in survivors:
                    worked.add(proc.name)
            time.sleep(1)
        return worked


def _beat_sends(cluster: Cluster, beat: Process | None) -> int:
    if beat is None:
        return 0
    log = cluster.log_dir / f"{beat.name}.log"
    return log.read_text(errors="replace").count("Sending due task") if log.exists() else 0
