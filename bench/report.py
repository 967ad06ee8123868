"""The bench's result: the targets and their verdicts, the JSON written, the table printed."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.environment import ROOT, Setup, machine
from bench.variants import Variant

RESULTS = ROOT / "bench" / "results"

TARGETS = {
    "throughput_ratio": (">=", 0.5),
    "latency_p50_ratio": ("<=", 2.0),
    "latency_p99_ratio": ("<=", 2.0),
    "start_p50_ms": ("<=", 10.0),
    "history_ratio": ("<=", 1.2),
    "verify_events_per_s": (">=", 100_000.0),
    "sweep_tick_ms": ("<=", 50.0),
    "map_ratio": ("<=", 1.2),
    "concurrent_ratio": (">=", 0.5),
    # Broker load: run_task messages per attempt over a wide map, and none left queued.
    "broker_messages_per_attempt": ("<=", 2.0),
    "broker_queue_at_end": ("<=", 0.0),
    # A purge does not hold up running work: a chain's p99 hop while it runs.
    "purge_p99_ratio": ("<=", 2.0),
}


def verdicts(figures: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {}
    for name, (op, target) in TARGETS.items():
        names = [name]
        if name == "verify_events_per_s":
            names = [n for n in figures if n.startswith("verify_") and n.endswith("_per_s")]
        for figure in names:
            if figure not in figures:
                continue
            value = figures[figure]["median"]
            ok = value >= target if op == ">=" else value <= target
            out[figure] = {"target": f"{op} {target:g}", "pass": ok}
    return out


def render(result: dict[str, Any]) -> str:
    lines = [
        f"bench {result['variant']}  ({result['machine']['nproc']} cpu, "
        f"{result['machine']['cpu_model']}, {result['machine']['ram_gb']} GB)",
        f"{'figure':<48} {'median':>12} {'range (min-max)':>25}  {'unit':<11} target",
    ]
    for name, fig in result["figures"].items():
        verdict = result["verdicts"].get(name)
        mark = f"{verdict['target']:<10} {'PASS' if verdict['pass'] else 'MISS'}" if verdict else ""
        span = f"{_fmt(fig['min'])} - {_fmt(fig['max'])}"
        lines.append(f"{name:<48} {_fmt(fig['median']):>12} {span:>25}  {fig['unit']:<11} {mark}")
    return "\n".join(lines)


def _fmt(value: float) -> str:
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.3f}"


def build_result(
    *, variant: Variant, setup: Setup, started: float, figures, notes, errors
) -> dict[str, Any]:
    return {
        "variant": variant.name,
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "duration_s": round(time.time() - started, 1),
        "machine": machine(),
        "setup": {
            "database": setup.database,
            "broker": setup.broker_url,
            "raw_result_backend": setup.result_url,
            "engine_workers": "1 x `celery -A config worker -Q orchestrator,nodes "
            "--concurrency 2` (prefork, prefetch 1, acks late) + 1 x `celery -A config beat`",
            "raw_workers": "1 x `celery -A bench.raw_app worker --concurrency 2` (prefork, "
            "prefetch 1, acks late)",
            "api": "gunicorn config.wsgi -w 2 (sync)",
            "celery_task_events": setup.celery_events,
            "sizes": asdict(variant),
        },
        "figures": figures,
        "verdicts": verdicts(figures),
        "notes": notes,
        "errors": errors,
    }


def write_result(result: dict[str, Any], output: str) -> None:
    """bench/results/<variant>-<timestamp>.json, latest-<variant>.json, and `output` if any."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    text = json.dumps(result, indent=2, default=str)
    (RESULTS / f"{result['variant']}-{stamp}.json").write_text(text)
    (RESULTS / f"latest-{result['variant']}.json").write_text(text)
    if output:
        Path(output).write_text(text)
