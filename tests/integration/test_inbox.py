"""Coalesced orchestration with real workers (executions/inbox.py): claims take no lock,
results that find the lock taken wait in the attempt's row, and what the API shows still
follows the log closely: a node that runs on shows as running within a fraction of a
second, and a wide fan-out whose workers keep colliding on one execution verifies."""

from __future__ import annotations

import time
from typing import Any

from django.core.management import call_command

from executions.models import Attempt, Event, Task
from tests.factories import start
from tests.integration.test_reliability import wait_for


def test_a_node_that_runs_on_shows_as_running_long_before_it_ends(live) -> None:
    execution = start(
        {"nodes": [{"id": "slow", "type": "function", "function": "std.sleep",
                    "input": {"seconds": 3}}]}
    )  # fmt: skip
    task = Task.objects.filter(execution=execution, node_id="slow")
    wait_for(lambda: task.get().status == "running", 20, "the node to show as running")
    seen_at = time.monotonic()
    attempt = Attempt.objects.get(execution=execution, node_id="slow")
    assert attempt.finished_at is None  # still running: logged before its result
    started = Event.objects.get(execution=execution, type="task_started", node_id="slow")
    assert started.timestamp == attempt.claimed_at  # stamped when claimed
    done = live.wait(execution.pk, timeout=60)
    assert done.status == "succeeded"
    # Shown as running within a second of its claim (the lease keeper logs it at 50 ms;
    # the sweeper's tick is the backstop), so well over a second before it ended.
    assert time.monotonic() - seen_at > 1.0
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
