"""Render times of the admin console at scale: an execution page over a 100,000-event
history and the execution list over 100,000 executions (PostgreSQL).

    DEBUG=1 DATABASE_URL=postgres://.../db python -m bench.admin_pages [--events N] [--executions N]

Builds the data once (a marker workflow tells), then times each page through Django's
test client in this process (URL routing, queries, template rendering; no network), the
best and the median of several runs, and counts its queries.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from bench.definitions import RETRY_FOREVER, make_version  # noqa: E402
from bench.history import insert_history  # noqa: E402
from executions.models import Execution, Task  # noqa: E402
from workflows.models import WorkflowDefinition  # noqa: E402

MARKER = "admin-bench-history"
STATUSES = ("succeeded", "succeeded", "succeeded", "failed", "running", "cancelled", "pending")


def build(events: int, executions: int) -> Execution:
    found = WorkflowDefinition.objects.filter(name=MARKER).first()
    if found is not None:
        return Execution.objects.filter(workflow=found).order_by("created_at").first()  # type: ignore[return-value]
    version = make_version(MARKER, RETRY_FOREVER)
    started = time.perf_counter()
    execution_id, _ = insert_history(version, events)
    print(f"history of {events:,} events stored in {time.perf_counter() - started:.1f}s")
    started = time.perf_counter()
    others = [make_version(f"admin-bench-{i}", RETRY_FOREVER) for i in range(5)]
    batch = 5_000
    for first in range(0, executions, batch):
        rows = []
        for i in range(first, min(first + batch, executions)):
            owner = others[i % len(others)]
            rows.append(
                Execution(
                    id=uuid.uuid4(),
                    workflow_id=owner.workflow_id,
                    version=owner,
                    status=STATUSES[i % len(STATUSES)],
                    input={"n": i},
                    created_by="bench",
                )
            )
        with transaction.atomic():
            Execution.objects.bulk_create(rows)
            Task.objects.bulk_create(
                Task(execution=e, node_id="f", type="function", status=e.status) for e in rows
            )
    with connection.cursor() as cursor:  # spread over 400 days (auto_now_add set "now")
        cursor.execute(
            "UPDATE executions_execution SET created_at = now() - random() * interval '400 days' "
            "WHERE created_by = 'bench'"
        )
        cursor.execute("ANALYZE")
    print(f"{executions:,} executions stored in {time.perf_counter() - started:.1f}s")
    return Execution.objects.get(pk=execution_id)


def measure(client: Client, url: str, runs: int) -> tuple[float, float, float, int, int]:
    """Wall-clock ms (best, median), this process's CPU ms (best: the rendering, less
    disturbed by a loaded machine than wall-clock), queries, response size."""
    times, cpu = [], []
    for _ in range(runs):
        with CaptureQueriesContext(connection) as queries:
            started, started_cpu = time.perf_counter(), time.process_time()
            response = client.get(url)
            times.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - started_cpu) * 1000)
        assert response.status_code == 200, (url, response.status_code)
    best = min(times)
    return best, statistics.median(times), min(cpu), len(queries), len(response.content)


def prepare() -> tuple[argparse.Namespace, Execution, Execution, Any]:
    """The benches' shared set-up: arguments, the database filled (build), a superuser;
    returns (args, the big execution, another one, the user)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--executions", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    big = build(args.events, args.executions)
    user = get_user_model().objects.filter(username="bench-root").first()
    if user is None:
        user = get_user_model().objects.create_superuser("bench-root", password="pw")
    some = Execution.objects.exclude(pk=big.pk).order_by("created_at").first()
    assert some is not None
    return args, big, some, user


def main() -> None:
    args, big, some, user = prepare()
    client = Client()
    client.force_login(user)
    base = "/admin/executions/execution/"
    pages = {
        f"execution page, {big.last_seq:,} events": f"{base}{big.pk}/change/",
        "  same, log page in the middle": f"{base}{big.pk}/change/?before={big.last_seq // 2}",
        "  its live fragment": f"{base}{big.pk}/live/",
        "  its events in the event list": f"/admin/executions/event/?execution__id__exact={big.pk}",
        f"list, {Execution.objects.count():,} executions": base,
        "  status=failed": f"{base}?status__exact=failed",
        "  workflow": f"{base}?workflow__id__exact={some.workflow_id}",
        "  has failed nodes": f"{base}?failed_nodes=yes",
        "  date hierarchy (a month)": f"{base}?created_at__year={some.created_at.year}"
        f"&created_at__month={some.created_at.month}",
        "  search by id": f"{base}?q={some.pk}",
    }
    print(os.getloadavg())
    print(f"{'page':45} {'best ms':>8} {'median':>8} {'cpu ms':>8} {'queries':>8} {'KB':>6}")
    for name, url in pages.items():
        best, median, cpu, queries, size = measure(client, url, args.runs)
        print(f"{name:45} {best:8.1f} {median:8.1f} {cpu:8.1f} {queries:8d} {size / 1024:6.0f}")


if __name__ == "__main__":
    main()
