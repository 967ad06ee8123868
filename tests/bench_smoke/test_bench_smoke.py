"""`./dev bench smoke` produces every figure (their values are not checked here).

Needs PostgreSQL and Redis (as `./dev test` provides); skipped on the embedded defaults.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.run import VARIANTS

ROOT = Path(__file__).resolve().parents[2]

needs_servers = pytest.mark.skipif(
    not os.environ.get("DATABASE_URL", "").startswith("postgres")
    or not os.environ.get("CELERY_BROKER_URL", "").startswith("redis"),
    reason="the bench runs on PostgreSQL + Redis (DATABASE_URL, CELERY_BROKER_URL)",
)


def expected_figures() -> set[str]:
    v = VARIANTS["smoke"]
    names = {
        "throughput_engine_nodes_per_s", "throughput_raw_tasks_per_s", "throughput_ratio",
        "latency_engine_hop_p50_ms", "latency_engine_hop_p99_ms",
        "latency_raw_hop_p50_ms", "latency_raw_hop_p99_ms",
        "latency_p50_ratio", "latency_p99_ratio",
        "start_p50_ms", "start_p99_ms",
        f"advance_{v.history_short}_events_ms", f"advance_{v.history_long}_events_ms",
        "history_ratio", "sweep_tick_ms",
        "rss_worker_main_mb", "rss_worker_children_mb", "rss_beat_mb",
        "map_ratio", "concurrent_engine_executions_per_s", "concurrent_raw_chains_per_s",
        "concurrent_ratio",
        "broker_messages_per_attempt", "broker_queue_at_end",
        "purge_events_per_s", "purge_chain_hop_p99_before_ms", "purge_chain_hop_p99_during_ms",
        "purge_p99_ratio",
    }  # fmt: skip
    names |= {f"map_{n}_items_ms_per_item" for n in v.map_sizes}
    for size in (*v.verify_sizes, *v.verify_once):
        names |= {f"verify_{size}_events_per_s", f"replay_verify_command_{size}_events_per_s"}
    return names


@needs_servers
@pytest.mark.timeout(900)
def test_bench_smoke_produces_every_figure(tmp_path: Path) -> None:
    output = tmp_path / "smoke.json"
    # With task events: the broker scenario counts run_task messages from task-sent ones.
    run = subprocess.run(
        [sys.executable, "-m", "bench.run", "smoke", "--celery-events", "--output", str(output)],
        cwd=ROOT, capture_output=True, text=True, timeout=850, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    result = json.loads(output.read_text())
    missing = expected_figures() - set(result["figures"])
    assert not missing, f"figures missing: {sorted(missing)}"
    for name, figure in result["figures"].items():
        assert figure["min"] <= figure["median"] <= figure["max"], name
        assert figure["runs"], name
    assert result["machine"]["nproc"]
    assert result["verdicts"]
