"""The sizes of each bench variant: `smoke` (CI, the test suite) and `full`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Variant:
    name: str
    fanout: int  # width of the 1 -> N -> 1 fan-out (nodes = N + 2)
    fanout_runs: int
    chain: int  # length of the linear chain
    chain_runs: int
    starts: int  # POST /executions per run
    start_runs: int
    history_short: int  # events
    history_long: int
    history_runs: int
    advances_per_run: int
    verify_sizes: tuple[int, ...]
    verify_runs: int
    verify_once: tuple[int, ...]  # sizes measured once (their range is one run)
    in_flight: int
    sweep_runs: int
    map_sizes: tuple[int, ...]  # items of a std.noop map, smallest first
    map_runs: int
    concurrent: int  # 3-node chains started at once
    concurrent_runs: int


VARIANTS = {
    "smoke": Variant(
        name="smoke",
        fanout=48,
        fanout_runs=2,
        chain=20,
        chain_runs=2,
        starts=20,
        start_runs=2,
        history_short=10,
        history_long=1_000,
        history_runs=2,
        advances_per_run=5,
        verify_sizes=(2_000, 10_000),
        verify_runs=2,
        verify_once=(),
        in_flight=200,
        sweep_runs=3,
        map_sizes=(20, 80),
        map_runs=2,
        concurrent=20,
        concurrent_runs=2,
    ),
    "full": Variant(
        name="full",
        # The DSL allows at most 1000 nodes per definition: 1 -> 998 -> 1 is 1000 nodes,
        # and the raw chord is the same 1 -> 998 -> 1.
        fanout=998,
        fanout_runs=3,
        chain=100,
        chain_runs=5,
        starts=200,
        start_runs=3,
        history_short=10,
        history_long=10_000,
        history_runs=3,
        advances_per_run=20,
        verify_sizes=(10_000, 100_000),
        verify_runs=3,
        verify_once=(1_000_000,),
        in_flight=10_000,
        sweep_runs=15,
        map_sizes=(500, 2_000, 10_000),
        map_runs=3,
        concurrent=200,
        concurrent_runs=3,
    ),
}
