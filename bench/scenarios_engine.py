"""Scenarios d-e, of the engine alone: advance and verify over long histories, and a sweep
over many executions in flight (with the workers' memory)."""

from __future__ import annotations

import io
import statistics
import time

from bench.base import BenchBase
from bench.definitions import DELAY_HOUR, RETRY_FOREVER, make_version
from bench.history import insert_history
from bench.processes import children, rss_kb
from bench.stats import summary


class EngineScenarios(BenchBase):
    """Scenarios d-e: history, in_flight."""

    # d. history ---------------------------------------------------------------------

    def history(self) -> None:
        from django.db import connection, transaction
        from django.test.utils import CaptureQueriesContext

        from executions.kernel.advance import execution_advance
        from executions.models import Event, Execution

        version = make_version("retry-forever", RETRY_FOREVER)
        timings: dict[int, list[float]] = {}
        queries: dict[int, int] = {}
        for size in (self.v.history_short, self.v.history_long):
            execution_id, state = insert_history(version, size)
            attempt = state.nodes["f"].attempt + 1
            due = state.nodes["f"].next_retry_at
            per_run = []
            for _ in range(self.v.history_runs):
                samples = []
                for _ in range(self.v.advances_per_run):
                    with transaction.atomic():
                        # A timer fires (a fact), then one advance decides upon it:
                        # task_scheduled of the next attempt. Rolled back, so repeatable.
                        Event.objects.create(
                            execution_id=execution_id, seq=size + 1, type="timer_fired",
                            node_id="f", attempt=attempt, source="timer",
                            data={"kind": "retry", "due_at": due.isoformat()},
                            timestamp=due,
                        )  # fmt: skip
                        Execution.objects.filter(pk=execution_id).update(last_seq=size + 1)
                        with CaptureQueriesContext(connection) as captured:
                            t0 = time.perf_counter()
                            decided = execution_advance(execution_id=execution_id)
                            samples.append((time.perf_counter() - t0) * 1000)
                        assert decided == 1, decided
                        queries[size] = len(captured.captured_queries)
                        transaction.set_rollback(True)
                per_run.append(statistics.median(samples))
            timings[size] = per_run
        short, long = self.v.history_short, self.v.history_long
        self.figures[f"advance_{short}_events_ms"] = summary(timings[short], "ms")
        self.figures[f"advance_{long}_events_ms"] = summary(timings[long], "ms")
        self.figures["history_ratio"] = summary(
            [b / a for a, b in zip(timings[short], timings[long], strict=True)], "long/short"
        )
        self.notes["advance_queries"] = {str(k): v for k, v in queries.items()}

        for size in (*self.v.verify_sizes, *self.v.verify_once):
            runs = 1 if size in self.v.verify_once else self.v.verify_runs
            self.verify(version, size, runs)

    def verify(self, version, size: int, runs: int) -> None:
        from django.core.management import call_command

        from executions.definitions import definition_for
        from executions.engine.verify import verify
        from executions.kernel.log import events_of, to_engine

        t0 = time.perf_counter()
        execution_id, _ = insert_history(version, size)
        self.notes[f"history_{size}_build_s"] = round(time.perf_counter() - t0, 1)
        definition = definition_for(version.pk)
        core, command = [], []
        for _ in range(runs):
            rows = events_of(execution_id).iterator(chunk_size=5000)
            events = [to_engine(row) for row in rows]
            t0 = time.perf_counter()
            found = verify(definition, events, execution_id=str(execution_id))
            core.append(size / (time.perf_counter() - t0))
            if found is not None:
                raise RuntimeError(f"synthetic history does not verify: {found}")
            del events
            out, err = io.StringIO(), io.StringIO()
            t0 = time.perf_counter()
            call_command(
                "replay_execution", str(execution_id), "--verify", "--quiet",
                stdout=out, stderr=err,
            )  # fmt: skip
            command.append(size / (time.perf_counter() - t0))
            if "verified" not in out.getvalue():
                raise RuntimeError(f"replay_execution --verify: {out.getvalue()}")
        self.figures[f"verify_{size}_events_per_s"] = summary(core, "events/s")
        self.figures[f"replay_verify_command_{size}_events_per_s"] = summary(command, "events/s")

    # e. many in flight --------------------------------------------------------------

    def in_flight(self) -> None:
        from django.db import transaction

        from executions.services.start import execution_start
        from executions.services.sweep import sweep

        version = make_version("delay-hour", DELAY_HOUR)
        t0 = time.perf_counter()
        left = self.v.in_flight
        while left:
            batch = min(left, 250)
            with transaction.atomic():
                for _ in range(batch):
                    execution_start(version=version, input={})
            left -= batch
        self.notes["in_flight_created_s"] = round(time.perf_counter() - t0, 1)
        time.sleep(3)  # a few sweeps by beat + worker over the waiting executions
        ticks = []
        for _ in range(self.v.sweep_runs):
            t0 = time.perf_counter()
            report = sweep()
            ticks.append((time.perf_counter() - t0) * 1000)
            time.sleep(0.1)
        self.notes["sweep_report"] = vars(report)
        self.figures["sweep_tick_ms"] = summary(ticks, "ms")
        worker = self.procs["worker"].pid
        beat = self.procs["beat"].pid
        main, kids, beats = [], [], []
        for _ in range(3):
            main.append(rss_kb(worker) / 1024)
            kids.append(sum(rss_kb(pid) for pid in children(worker)) / 1024)
            beats.append(rss_kb(beat) / 1024)
            time.sleep(1)
        self.figures["rss_worker_main_mb"] = summary(main, "MB")
        self.figures["rss_worker_children_mb"] = summary(kids, "MB")
        self.figures["rss_beat_mb"] = summary(beats, "MB")
        self.notes["worker_children"] = len(children(worker))
