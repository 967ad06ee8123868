"""A purge while real workers run: the ended trees go with every row of theirs, the running
executions and their children work on to their end untouched, and a purge killed half
way (its process, with SIGKILL) resumes with nothing lost or half deleted."""

from __future__ import annotations

import signal
import subprocess
import sys
import uuid
from datetime import timedelta
from io import StringIO
from uuid import UUID

from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from executions.engine.statuses import EXECUTION_TERMINAL
from executions.models import Event, Execution, Tombstone
from executions.schedules.services import schedule_create, schedule_run
from executions.services.start import execution_start
from tests.factories import make_version
from tests.integration.engine import Engine, assert_replayable
from tests.purge_world import owned_rows
from tests.waiting import eventually
from workflows.models import WorkflowVersion

SLEEP = {"id": "s", "type": "function", "function": "std.sleep", "input": "{{ input }}"}


def family() -> tuple[str, WorkflowVersion]:
    """A parent workflow whose `sub` node runs a child that sleeps input.seconds."""
    suffix = uuid.uuid4().hex[:8]
    child = make_version({"nodes": [SLEEP]}, name=f"purge-child-{suffix}")
    parent = make_version(
        {
            "nodes": [
                {"id": "sub", "type": "workflow", "workflow": child.workflow.name,
                 "input": "{{ input }}"},
                {"id": "after", "type": "function", "function": "std.echo",
                 "depends_on": ["sub"], "input": "{{ nodes.sub.output }}"},
            ]
        },
        name=f"purge-parent-{suffix}",
    )  # fmt: skip
    return parent.workflow.name, parent


def run(version: WorkflowVersion, seconds: float) -> Execution:
    execution, _ = execution_start(version=version, input={"seconds": seconds})
    return execution


def tree(execution: Execution) -> set[UUID]:
    return {execution.pk, *Execution.objects.filter(parent_execution=execution).values_list(
        "pk", flat=True)}  # fmt: skip


def ended(executions: list[Execution], timeout: float = 60) -> None:
    ids = [e.pk for e in executions]
    eventually(
        lambda: (
            Execution.objects.filter(pk__in=ids, status__in=EXECUTION_TERMINAL).count() == len(ids)
        ),
        timeout,
        "the executions did not end",
    )


def purge(name: str, *args: str) -> str:
    out = StringIO()
    until = (timezone.now() + timedelta(seconds=1)).isoformat()
    call_command("purge_executions", "--ended-before", until, "--workflow", name, *args, stdout=out)
    return out.getvalue()


def test_a_purge_leaves_running_trees_working_to_their_end(live: Engine) -> None:
    name, version = family()
    quick = [run(version, 0) for _ in range(4)]
    schedule = schedule_create(workflow=version.workflow, cron="* * * * *", input={"seconds": 0})
    fired = schedule_run(schedule_id=str(schedule.pk))
    assert fired is not None
    quick.append(fired)
    ended(quick)
    slow = [run(version, 4) for _ in range(2)]
    eventually(
        lambda: Execution.objects.filter(parent_execution__in=slow).count() == 2,
        30,
        "the slow children never started",
    )
    gone = set().union(*(tree(e) for e in quick))
    owned = owned_rows(gone)
    assert owned["executions_event"] > 0
    assert owned["executions_schedulefire"] == 1

    said = purge(name, "--batch-size", "3")

    assert f"purged {len(gone)} executions" in said
    assert not owned_rows(gone), "rows of purged executions are left"
    assert set(Tombstone.objects.filter(pk__in=gone).values_list("pk", flat=True)) == gone
    ended(slow)
    for execution in slow:
        for member in Execution.objects.filter(pk__in=tree(execution)):
            assert member.status == "succeeded", member.error
            assert_replayable(member)
    # Now they have ended, they go too.
    assert f"purged {2 * len(slow)} executions" in purge(name)
    out = StringIO()
    call_command("verify_logs", *map(str, gone), stdout=out)
    assert f"purged {len(gone)} executions" in out.getvalue()


def test_a_purge_killed_half_way_resumes_with_nothing_lost_or_half_deleted(
    live: Engine,
) -> None:
    name, version = family()
    executions = [run(version, 0) for _ in range(8)]
    ended(executions)
    members = set().union(*(tree(e) for e in executions))
    seqs = dict(Execution.objects.filter(pk__in=members).values_list("pk", "last_seq"))
    until = (timezone.now() + timedelta(seconds=1)).isoformat()
    argv = [sys.executable, "manage.py", "purge_executions", "--ended-before", until,
            "--workflow", name, "--batch-size", "2", "--verbosity", "2"]  # fmt: skip
    process = subprocess.Popen(
        argv, cwd=settings.BASE_DIR, env=live.env, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("batch 1:"):
            process.send_signal(signal.SIGKILL)
            break
    process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL

    purged = set(Tombstone.objects.filter(pk__in=members).values_list("pk", flat=True))
    assert purged
    assert purged != members
    for pk in members:
        events = Event.objects.filter(execution_id=pk).count()
        # Whole or not at all: a tombstone and no event, or the whole log.
        assert events == (0 if pk in purged else seqs[pk]), pk
        assert Execution.objects.filter(pk=pk).exists() == (pk not in purged)

    said = purge(name, "--batch-size", "2")
    assert f"purged {len(members) - len(purged)} executions" in said
    assert set(Tombstone.objects.filter(pk__in=members).values_list("pk", flat=True)) == members
    assert not owned_rows(members)
