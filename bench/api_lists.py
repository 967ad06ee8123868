"""Response times of the API's lists at scale: GET /executions over 100,000 executions
with each filter, an execution's events over a 100,000-event history (keyset pages, the
long poll's look) and its why (PostgreSQL).

    DEBUG=1 DATABASE_URL=postgres://.../db python -m bench.api_lists [--events N] [--executions N]

Shares its data with bench/admin_pages.py (built once, a marker workflow tells). Times each
request through DRF's test client in this process (routing, permissions, queries,
serialization; no network): best and median of several runs, and its queries.
"""

from __future__ import annotations

import os
import statistics
import time
from datetime import timedelta

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

from bench.admin_pages import prepare  # noqa: E402
from executions.longpoll import wait_for_rows  # noqa: E402
from executions.models import Event, Execution  # noqa: E402


def measure(client: APIClient, url: str, runs: int) -> tuple[float, float, int, int]:
    times = []
    for _ in range(runs):
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (url, response.status_code, response.content[:300])
    return min(times), statistics.median(times), len(queries), len(response.content)


def look_ms(execution: Execution, runs: int) -> float:
    """One look of the long poll after a pause: connect again (the connection was closed
    while it slept) and an EXISTS past the log's end."""
    times = []
    for _ in range(runs):
        rows = Event.objects.filter(execution=execution, seq__gt=execution.last_seq)
        connection.close()
        started = time.perf_counter()
        wait_for_rows(rows, seconds=0)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    args, big, some, user = prepare()
    client = APIClient()
    client.force_authenticate(user)
    month = some.created_at + timedelta(days=30)
    e = f"/executions/{big.pk}"
    pages = {
        f"GET /executions ({Execution.objects.count():,})": "/executions",
        "  ?status=failed": "/executions?status=failed",
        "  ?workflow=<name>": f"/executions?workflow={some.workflow.name}",
        "  ?has_failed_nodes=true": "/executions?has_failed_nodes=true",
        "  ?created_after..before (30 days)": "/executions?created_after="
        f"{some.created_at.isoformat()}&created_before={month.isoformat()}".replace("+", "%2B"),
        "  ?offset=50000": "/executions?offset=50000",
        f"GET {'{id}'}/events ({big.last_seq:,}), first 500": f"{e}/events",
        "  ?after_seq=50000 (a middle page)": f"{e}/events?after_seq=50000",
        "  ?after_seq=<end-100> (the tail)": f"{e}/events?after_seq={big.last_seq - 100}",
        "  ?after_seq=<end>&wait=0 (nothing new)": f"{e}/events?after_seq={big.last_seq}",
        "  ?node_id=f&after_seq=50000": f"{e}/events?node_id=f&after_seq=50000",
        f"GET {'{id}'}/why": f"{e}/why",
        f"GET {'{id}'}/tasks/f/why": f"{e}/tasks/f/why",
    }
    print(f"{'request':48} {'best ms':>8} {'median':>8} {'queries':>8} {'KB':>6}")
    for name, url in pages.items():
        best, median, queries, size = measure(client, url, args.runs)
        print(f"{name:48} {best:8.1f} {median:8.1f} {queries:8d} {size / 1024:6.0f}")
    print(
        f"{'long poll: one look (connect + EXISTS), median':48} {look_ms(big, args.runs * 5):8.1f}"
    )


if __name__ == "__main__":
    main()
