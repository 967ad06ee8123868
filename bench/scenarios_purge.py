"""Scenario `purge`: `manage.py purge_executions` over N stored events (full: 1,000,000),
in events/s, and the hop latency of a chain the workers run before and while it runs
(the target: the p99 during the purge within twice the p99 before it).

The events are copies of the golden histories (bench/whole_db.py), which keep the times
they were recorded at: `--ended-before` the last of those takes them all and none of the
executions this run starts (a history recorded today is within a day of it). The purge
runs as the command does, in a process of its own with the default batches; the chains
run back to back while it does (at least one, however short the purge), each hop the
time from one node's task_started to the next one's.
"""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import timedelta
from itertools import pairwise
from typing import ClassVar

from bench.base import BenchBase
from bench.definitions import chain_definition, make_version
from bench.environment import ROOT
from bench.stats import percentile, summary

#: Stored events the purge deletes, per variant.
SIZES = {"smoke": 20_000, "full": 1_000_000}
#: Nodes of the chain measured around it, and how many run before it.
CHAIN = 20
CHAINS_BEFORE = 3

_SAID = re.compile(r"purged (\d+) executions .*?, (\d+) events in \d+ batches, ([\d.]+)s")


def copies_ended_by() -> str:
    """Just after the last stored copy ended (the copies are the golden-* workflows')."""
    from django.db.models import Max

    from executions.models import Execution

    copies = Execution.objects.filter(workflow__name__startswith="golden-")
    last = copies.aggregate(last=Max("ended_at"))["last"]
    return (last + timedelta(milliseconds=1)).isoformat()


class PurgeScenarios(BenchBase):
    """Scenario i: a purge of N events with a chain of executions running."""

    #: Scenario name -> method, collected by bench.scenarios.SCENARIOS.
    scenarios: ClassVar[dict[str, str]] = {"purge": "purge"}

    def purge(self) -> None:
        from bench.whole_db import populate

        stored, events = populate(SIZES[self.v.name])
        cutoff = copies_ended_by()
        version = make_version("purge-chain", chain_definition(CHAIN))
        before: list[float] = []
        for _ in range(CHAINS_BEFORE):
            before += self.chain_hops(version)
        argv = [sys.executable, "manage.py", "purge_executions", "--ended-before", cutoff]
        process = subprocess.Popen(
            argv, cwd=ROOT, env=self.procs.env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        during: list[float] = []
        while process.poll() is None or not during:
            during += self.chain_hops(version)
        output, _ = process.communicate(timeout=3600)
        found = _SAID.search(output)
        if process.returncode != 0 or found is None:
            raise RuntimeError(f"purge_executions failed ({process.returncode}): {output[-2000:]}")
        executions, purged, seconds = int(found[1]), int(found[2]), float(found[3])
        if purged != events:
            raise RuntimeError(f"purged {purged} of the {events} stored events: {output[-2000:]}")
        p99_before, p99_during = percentile(before, 99) * 1000, percentile(during, 99) * 1000
        self.figures["purge_events_per_s"] = summary([purged / seconds], "events/s")
        self.figures["purge_chain_hop_p99_before_ms"] = summary([p99_before], "ms")
        self.figures["purge_chain_hop_p99_during_ms"] = summary([p99_during], "ms")
        self.figures["purge_p99_ratio"] = summary([p99_during / p99_before], "during/before")
        self.notes["purge"] = {
            "events": purged,
            "executions": executions,
            "stored_executions": stored,
            "seconds": seconds,
            "hops_before": len(before),
            "hops_during": len(during),
        }

    def chain_hops(self, version) -> list[float]:
        """One chain execution, run to its end: its hops in seconds."""
        from executions.models import Event

        _, execution_id = self.start_engine(version)
        self.wait_engine(execution_id, 300)
        started = dict(
            Event.objects.filter(execution_id=execution_id, type="task_started").values_list(
                "node_id", "timestamp"
            )
        )
        ids = [f"c{i}" for i in range(CHAIN)]
        return [(started[b] - started[a]).total_seconds() for a, b in pairwise(ids)]
