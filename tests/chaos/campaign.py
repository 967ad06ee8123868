"""One chaos campaign: start executions over the API while the monkey kills workers and
restarts the servers, wait until every execution is over, then check everything.

Runs inside the runner's Django process (configured for the chaos database by run.py).
Every database call here survives the PostgreSQL restart: it reconnects and tries again.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path
from typing import Any

from django.db import InterfaceError, OperationalError, connection
from django.utils import timezone

from executions.engine.statuses import EXECUTION_TERMINAL
from executions.models import Event, Execution
from tests.chaos.checks import SHOWN, check_all, timeout_causes, worker_log_figures
from tests.chaos.cluster import Cluster
from tests.chaos.common import db, say
from tests.chaos.monkey import Monkey
from tests.chaos.workload import (
    POOL,
    POOL_SLOTS,
    CountingServer,
    definition,
    execution_input,
)

#: No new event anywhere for this long while executions are unfinished: the run is stuck.
STALL_SECONDS = 180


class Submitter(threading.Thread):
    """POST /executions with an Idempotency-Key, as a client would: a request that fails
    (the database or broker is restarting) is repeated with the same key until it is 201."""

    def __init__(self, client, workflow: str, count: int, in_flight: int, run_id: str):
        super().__init__(name="chaos-submitter", daemon=True)
        self.client, self.workflow, self.count, self.cap = client, workflow, count, in_flight
        self.run_id = run_id
        self.inputs: dict[str, int] = {}
        self.retried = 0
        self.error: BaseException | None = None
        self.finished_at: float | None = None

    def unfinished(self) -> int:
        ids = list(self.inputs)
        return db(
            lambda: (
                Execution.objects.filter(pk__in=ids).exclude(status__in=EXECUTION_TERMINAL).count()
            )
        )

    def post(self, n: int) -> str:
        key = f"chaos-{self.run_id}-{n}"
        while True:
            try:
                response = self.client.post(
                    "/executions",
                    {"workflow": self.workflow, "input": execution_input(n)},
                    format="json",
                    HTTP_IDEMPOTENCY_KEY=key,
                )
                if response.status_code == 201:
                    return response.json()["id"]
                if response.status_code < 500:
                    raise RuntimeError(
                        f"POST /executions: {response.status_code} {response.content!r}"
                    )
            except (OperationalError, InterfaceError):
                pass
            connection.close()
            self.retried += 1
            time.sleep(0.5)

    def run(self) -> None:
        try:
            for n in range(self.count):
                while self.unfinished() >= self.cap:
                    time.sleep(0.2)
                self.inputs[self.post(n)] = n
            self.finished_at = time.monotonic()
        except BaseException as exc:  # reported by the campaign
            self.error = exc
        finally:
            connection.close()


def api_client():
    """An API client of the user "chaos", who may write workflows and start executions."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    user, created = get_user_model().objects.get_or_create(username="chaos")
    if created:
        user.set_password("chaos-pw")
        user.save()
    # Writes workflows and starts executions: the shipped roles that may (workflows.roles).
    user.groups.set(Group.objects.filter(name__in=["author", "operator"]))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


class Campaign:
    def __init__(
        self,
        cluster: Cluster,
        variant,
        rng: random.Random,
        database: str,
        broker: str,
        run_dir: Path,
    ):
        self.cluster, self.variant, self.rng = cluster, variant, rng
        self.database, self.broker, self.run_dir = database, broker, run_dir
        #: Restart Redis and PostgreSQL once each (off only while working on the runner).
        self.restarts = True

    def run(self, report: dict[str, Any]) -> bool:
        server = CountingServer()
        server.start()
        client = api_client()
        pool = client.post("/pools", {"name": POOL, "slots": POOL_SLOTS}, format="json")
        assert pool.status_code == 201, pool.content
        created = client.post(
            "/workflows", {"name": "chaos-dag", "definition": definition(server.url)}, format="json"
        )
        assert created.status_code == 201, created.content
        self.cluster.start(workers=3)
        submitter = Submitter(
            client, "chaos-dag", self.variant.executions, self.variant.in_flight, self.run_dir.name
        )
        monkey = Monkey(self.cluster, self.variant.kill_every, self.rng, self.database, self.broker)
        monkey.progress = lambda: len(submitter.inputs) / self.variant.executions
        monkey.restarts = self.restarts
        began = time.monotonic()
        submitter.start()
        monkey.start()
        try:
            finished = self._wait(submitter, monkey, began)
        finally:
            monkey.stop.set()
            monkey.join(timeout=120)
            server.shutdown()
        duration = time.monotonic() - began
        report.update(
            executions=len(submitter.inputs),
            duration_seconds=round(duration, 1),
            submit_seconds=round((submitter.finished_at or time.monotonic()) - began, 1),
            api_retries=submitter.retried,
            chaos=monkey.summary(),
        )
        say(f"all over after {duration:.0f}s; checking")
        problems, figures = db(
            lambda: check_all(submitter.inputs, self.run_dir / "runs.log", server.requests)
        )
        figures["succeeded"] = db(lambda: Execution.objects.filter(status="succeeded").count())
        windows = [
            (o["from"], o["to"]) for o in (*monkey.outages["redis"], *monkey.outages["postgres"])
        ]
        figures["timeouts_by_cause"] = db(lambda: timeout_causes(monkey.killed_pids, windows))
        figures.update(worker_log_figures(self.cluster.log_dir))
        report["figures"] = figures
        report["checks"] = {
            name: {"count": len(found), "examples": found[:SHOWN]}
            for name, found in problems.items()
        }
        errors = [e for e in (submitter.error, monkey.error) if e is not None]
        report["errors"] = [repr(e) for e in errors]
        if not finished:
            report["errors"].append("executions still unfinished at the end")
        return finished and not errors and not any(problems.values())

    def _wait(self, submitter: Submitter, monkey: Monkey, began: float) -> bool:
        """Until every execution is over (True), or a timeout or stall (False)."""
        last_seen, last_change, last_print = -1, time.monotonic(), 0.0
        while True:
            time.sleep(1)
            if submitter.error or monkey.error:
                say(f"aborting: {submitter.error or monkey.error!r}")
                return False
            events = db(lambda: Event.objects.count())
            now = time.monotonic()
            if events != last_seen:
                last_seen, last_change = events, now
            submitted = len(submitter.inputs)
            done = submitted - submitter.unfinished()
            if now - last_print >= 10:
                say(
                    f"t={now - began:.0f}s submitted {submitted}/{self.variant.executions} "
                    f"done {done} events {events} kills {monkey.kills}"
                )
                last_print = now
            over = submitter.finished_at is not None and done == self.variant.executions
            if over and monkey.outages_done():
                return True
            if now - began > self.variant.timeout:
                say(f"timeout: {self.variant.executions - done} executions unfinished")
                return False
            if now - last_change > STALL_SECONDS:
                say(f"stalled: no new event for {STALL_SECONDS}s at {timezone.now()}")
                return False
