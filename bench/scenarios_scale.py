"""Scenarios f-g, of scale, run by live workers: a map's cost per item as it grows, and many
small executions at once against raw Celery running the same tasks as chains."""

from __future__ import annotations

import time
from typing import ClassVar

from bench.base import BenchBase
from bench.definitions import chain_definition, make_version, map_definition
from bench.stats import summary

#: Length of each of the many small executions (the scale target: "200 concurrent executions of a
#: 3-node chain").
SMALL_CHAIN = 3


class ScaleScenarios(BenchBase):
    """Scenarios f-g: maps, concurrent."""

    #: Scenario name -> method, collected by bench.scenarios.SCENARIOS.
    scenarios: ClassVar[dict[str, str]] = {"maps": "maps", "concurrent": "concurrent"}

    # f. maps ------------------------------------------------------------------------

    def maps(self) -> None:
        """A map of N std.noop items (the default max_parallel), from the start call to
        workflow_completed, per item; the ratio of the largest map's per-item time to the
        smallest's (the target: flat, <= 1.2)."""
        version = make_version("map", map_definition())
        sizes = self.v.map_sizes
        per_item: dict[int, list[float]] = {n: [] for n in sizes}
        for _ in range(self.v.map_runs):
            # Sizes interleaved within a run: load that drifts over minutes hits all alike.
            for n in sizes:
                t0, execution_id = self.start_engine(version, {"items": list(range(n))})
                self.wait_engine(execution_id, 60 + n * 0.5)
                per_item[n].append((self.ended_at(execution_id) - t0) * 1000 / n)
        for n in sizes:
            self.figures[f"map_{n}_items_ms_per_item"] = summary(per_item[n], "ms/item")
        small, large = per_item[sizes[0]], per_item[sizes[-1]]
        self.figures["map_ratio"] = summary(
            [b / a for a, b in zip(small, large, strict=True)], f"{sizes[-1]}/{sizes[0]}"
        )

    # g. many small executions at once -----------------------------------------------

    def concurrent(self) -> None:
        """N executions of a 3-node chain started back to back (each in its own
        transaction, as N requests would), from the first start to the last
        workflow_completed, against raw Celery applying the same N chains of 3 no-ops
        from the first apply_async to the last chain's last task start."""
        from celery import chain

        count = self.v.concurrent
        version = make_version("small-chain", chain_definition(SMALL_CHAIN))
        engine_runs, raw_runs = [], []
        for _ in range(self.v.concurrent_runs):
            t0 = time.time()
            ids = [self.start_engine(version)[1] for _ in range(count)]
            self.notes.setdefault("concurrent_engine_start_s", []).append(
                round(time.time() - t0, 2)
            )
            self.wait_all(ids, 60 + count)
            end = max(self.ended_at(execution_id) for execution_id in ids)
            engine_runs.append(count / (end - t0))

            key = self.key("chains")
            t0 = time.time()
            for _ in range(count):
                steps = [self.sig() for _ in range(SMALL_CHAIN - 1)]
                chain(*steps, self.sig(key)).apply_async()
            stamps = self.wait_stamps(key, count, 60 + count)
            raw_runs.append(count / (max(stamps) - t0))
        self.figures["concurrent_engine_executions_per_s"] = summary(engine_runs, "exec/s")
        self.figures["concurrent_raw_chains_per_s"] = summary(raw_runs, "chains/s")
        self.figures["concurrent_ratio"] = summary(
            [e / r for e, r in zip(engine_runs, raw_runs, strict=True)], "engine/raw"
        )
        self.notes["concurrent_executions"] = count
