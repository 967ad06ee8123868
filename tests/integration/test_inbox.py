"""Coalesced orchestration with real workers (executions/kernel/inbox.py): claims take no lock,
results that find the lock taken wait in the attempt's row, and what the API shows still
follows the log closely: a node that runs on shows as running within a fraction of a
second, and a wide fan-out whose workers keep colliding on one execution verifies."""

from __future__ import annotations

import threading
from typing import Any

from django.core.management import call_command

from executions.engine.events import RESULT_TYPES
from executions.models import Attempt, Event, Execution, Task
from tests.factories import start
from tests.servers import Request, http_server
from tests.waiting import eventually, scaled


def shown_running_while_it_runs(execution: Execution) -> None:
    attempt = Attempt.objects.filter(execution=execution, node_id="slow")
    eventually(lambda: attempt.get().claimed_at, 20, "the node was never claimed")
    # Shown as running soon after its claim (the lease keeper logs it at 50 ms; the
    # sweeper's tick is the backstop), not only once its result comes.
    task = Task.objects.filter(execution=execution, node_id="slow")
    eventually(lambda: task.get().status == "running", 5, "not shown running 5 s after its claim")
    claimed = attempt.get()
    assert claimed.finished_at is None  # still running: logged before its result
    started = Event.objects.get(execution=execution, type="task_started", node_id="slow")
    assert started.timestamp == claimed.claimed_at  # stamped when claimed
    assert not Event.objects.filter(execution=execution, type__in=RESULT_TYPES).exists()


def test_a_node_that_runs_on_shows_as_running_long_before_it_ends(live) -> None:
    release = threading.Event()

    def held(request: Request, seen: list[Request]) -> tuple[int, Any]:
        # The node runs on until the test has seen it running: "before it ends" by
        # construction, whatever the machine's speed.
        assert release.wait(timeout=scaled(60)), "never released"
        return 200, {"ok": True}

    with http_server(held) as server:
        try:
            execution = start(
                {"nodes": [{"id": "slow", "type": "http",
                            "request": {"method": "GET", "url": f"{server.url}/held"}}]}
            )  # fmt: skip
            shown_running_while_it_runs(execution)
        finally:
            release.set()
        done = live.wait(execution.pk, timeout=60)
    assert done.status == "succeeded"
    assert server.hits("/held") == 1
    assert not Attempt.objects.filter(execution=execution, unlogged=True).exists()
    call_command("verify_logs", str(done.pk))


def test_a_wide_fan_out_on_two_worker_processes_logs_every_fact_once(live) -> None:
    width = 120
    nodes: list[dict[str, Any]] = [{"id": "root", "type": "function", "function": "std.noop"}]
    nodes += [
        {"id": f"b{i}", "type": "function", "function": "std.noop", "depends_on": ["root"]}
        for i in range(width)
    ]
    branches = [f"b{i}" for i in range(width)]
    nodes.append({"id": "join", "type": "function", "function": "std.noop",
                  "depends_on": branches})  # fmt: skip
    execution = start({"nodes": nodes})
    done = live.wait(execution.pk, timeout=120)
    assert done.status == "succeeded"
    kinds = Event.objects.filter(execution=done)
    for kind in ("task_started", "task_completed"):
        per_node = kinds.filter(type=kind).values_list("node_id", flat=True)
        assert sorted(per_node) == sorted(["root", "join", *branches]), kind
    assert not Attempt.objects.filter(execution=done, unlogged=True).exists()
    # Every claim cleared the payload it was given (the table keeps no second input).
    assert not Attempt.objects.filter(execution=done, payload__isnull=False).exists()
    call_command("verify_logs", str(done.pk))
