"""The bench: every scenario mixin on one object, and the scenarios by name."""

from __future__ import annotations

from collections.abc import Callable

from bench.scenarios_broker import BrokerScenarios
from bench.scenarios_engine import EngineScenarios
from bench.scenarios_live import LiveScenarios
from bench.scenarios_purge import PurgeScenarios
from bench.scenarios_scale import ScaleScenarios


class Bench(LiveScenarios, EngineScenarios, ScaleScenarios, BrokerScenarios, PurgeScenarios):
    """Constructed as BenchBase (bench/base.py)."""


SCENARIOS: dict[str, Callable[[Bench], None]] = {
    "throughput": Bench.throughput,
    "latency": Bench.latency,
    "start": Bench.start_latency,
    "history": Bench.history,
    "in_flight": Bench.in_flight,
}

# Registration point of a scenario module: a mixin declaring `scenarios` (name -> method),
# added to Bench's bases above, is collected here (its targets go in bench/report.py
# TARGETS, its figures in tests/bench_smoke's expected ones).
SCENARIOS |= {
    name: getattr(Bench, method)
    for mixin in reversed(Bench.__mro__)
    for name, method in vars(mixin).get("scenarios", {}).items()
}
