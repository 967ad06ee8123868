"""The bench's state and helpers (start, wait for the engine and for raw Celery's stamps),
the base of every scenario mixin."""

from __future__ import annotations

import time
import uuid
from typing import Any
from uuid import UUID

from bench.definitions import make_version, noop
from bench.variants import Variant
from executions.supervisor import Supervisor


class BenchBase:
    """What every scenario mixin (bench/scenarios_*.py) has: the variant's sizes, the
    processes, the figures and notes it fills, and the helpers to start and wait."""

    def __init__(self, variant: Variant, procs: Supervisor, stamps, raw_app):
        self.v = variant
        self.procs = procs
        self.stamps = stamps  # redis client on the stamp db
        self.raw = raw_app
        self.figures: dict[str, dict[str, Any]] = {}
        self.notes: dict[str, Any] = {}
        self.seq = 0

    # helpers ------------------------------------------------------------------------

    def key(self, what: str) -> str:
        self.seq += 1
        return f"bench:{what}:{self.seq}:{uuid.uuid4().hex[:8]}"

    def wait_engine(self, execution_id: UUID | str, timeout: float) -> None:
        from executions.engine.statuses import EXECUTION_TERMINAL
        from executions.models import Execution

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = Execution.objects.values_list("status", flat=True).get(pk=execution_id)
            if status in EXECUTION_TERMINAL:
                if status != "succeeded":
                    raise RuntimeError(f"execution {execution_id} ended {status}")
                return
            time.sleep(0.05)
            self.procs.check()
        raise TimeoutError(f"execution {execution_id} did not finish in {timeout}s")

    def wait_all(self, ids: list[UUID], timeout: float) -> None:
        """Until every execution of `ids` has ended; all must have succeeded."""
        from executions.engine.statuses import EXECUTION_TERMINAL
        from executions.models import Execution

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ended = dict(
                Execution.objects.filter(pk__in=ids, status__in=EXECUTION_TERMINAL).values_list(
                    "pk", "status"
                )
            )
            failed = {pk: status for pk, status in ended.items() if status != "succeeded"}
            if failed:
                raise RuntimeError(f"executions ended without success: {failed}")
            if len(ended) == len(ids):
                return
            time.sleep(0.05)
            self.procs.check()
        raise TimeoutError(f"{len(ids) - len(ended)} of {len(ids)} did not finish in {timeout}s")

    def ended_at(self, execution_id: UUID | str) -> float:
        """The timestamp of the execution's workflow_completed (epoch seconds)."""
        from executions.models import Event

        when = Event.objects.values_list("timestamp", flat=True).get(
            execution_id=execution_id, type="workflow_completed"
        )
        return when.timestamp()

    def wait_stamps(self, key: str, count: int, timeout: float) -> list[float]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.stamps.llen(key) >= count:
                return [float(x) for x in self.stamps.lrange(key, 0, -1)]
            time.sleep(0.02)
            self.procs.check()
        raise TimeoutError(f"raw celery: {key} has {self.stamps.llen(key)}/{count} stamps")

    def start_engine(self, version, input: Any = None) -> tuple[float, UUID]:
        from executions.services.start import execution_start

        t0 = time.time()
        execution, _ = execution_start(version=version, input={} if input is None else input)
        return t0, execution.pk

    def sig(self, *args: Any):
        return self.raw.signature("bench.raw_tasks.noop", args=args, immutable=True)

    def warm_up(self) -> None:
        version = make_version("warmup", {"nodes": [noop("a"), noop("b", ["a"])]})
        for _ in range(3):
            _, execution_id = self.start_engine(version)
            self.wait_engine(execution_id, 120)
        for _ in range(3):
            key = self.key("warm")
            self.sig(key).apply_async()
            self.wait_stamps(key, 1, 120)
