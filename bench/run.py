"""`python -m bench.run smoke|full`: the engine against raw Celery, side by side, in one run.

Runs on PostgreSQL + Redis (what `./dev bench` makes sure of):

- a fresh database `workflow_bench` (smoke: `workflow_bench_smoke`) on the server of
  DATABASE_URL, migrated here
  (WORKFLOW_BENCH_DATABASE_URL overrides the whole URL);
- Redis db 2 (smoke: 4) as the broker of both the engine and raw Celery, db 3 (smoke: 5)
  as the raw scenarios
  result backend and stamp store (BENCH_BROKER_URL / BENCH_RESULT_URL override);
- the engine: one `celery -A config worker -Q orchestrator,nodes --concurrency 2`
  (prefork: 2 worker processes, prefetch 1, acks late) and one `celery -A config beat`;
- raw Celery: one `celery -A bench.raw_app worker --concurrency 2` (the same arrangement:
  prefork, 2 processes, prefetch 1, acks late), tasks `bench.raw_tasks.noop`;
- the API for the start-latency scenario: `gunicorn config.wsgi -w 2` (sync workers).

Every figure is the median of several runs with its range (min-max). Prints a table and
writes bench/results/<variant>-<timestamp>.json and bench/results/latest-<variant>.json.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback

from bench.definitions import RETRY_FOREVER
from bench.environment import Setup, bench_urls, prepare, setup_django
from bench.history import synth_history
from bench.processes import start_workers
from bench.report import build_result, render, write_result
from bench.scenarios import SCENARIOS, Bench
from bench.variants import VARIANTS, Variant
from executions.supervisor import Supervisor

# Imported from here by the tests (tests/api, tests/bench_smoke).
__all__ = ["RETRY_FOREVER", "VARIANTS", "main", "synth_history"]


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(prog="python -m bench.run")
    parser.add_argument("variant", choices=sorted(VARIANTS), nargs="?", default="smoke")
    parser.add_argument(
        "--only", default="", help=f"comma-separated subset of: {', '.join(SCENARIOS)}"
    )
    parser.add_argument("--output", default="", help="write the JSON here as well")
    parser.add_argument(
        "--celery-events",
        action="store_true",
        help="task events (task-sent and the worker's) on for both the engine and raw "
        "Celery; default off for both, raw Celery's default",
    )
    args = parser.parse_args(argv)
    only = [s for s in args.only.split(",") if s] or list(SCENARIOS)
    unknown = set(only) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenarios: {', '.join(sorted(unknown))}")
    return args, only


def run_scenarios(
    variant: Variant, only: list[str], setup: Setup, stamps
) -> tuple[Bench, dict[str, str]]:
    """Workers up, both pools warmed, then each scenario; a failed one keeps the others."""
    from bench.raw_app import QUEUE
    from bench.raw_app import app as raw_app

    # Published from this process too (the raw scenarios' chains and chords).
    raw_app.conf.task_send_sent_event = setup.celery_events

    procs = Supervisor(setup.log_dir, setup.env)
    errors: dict[str, str] = {}
    try:
        start_workers(procs, QUEUE)
        bench = Bench(variant, procs, stamps, raw_app)
        print("==> warming up both worker pools", flush=True)
        bench.warm_up()
        for name in only:
            t0 = time.perf_counter()
            print(f"==> {name}", flush=True)
            try:
                SCENARIOS[name](bench)
            except Exception as exc:  # keep the other scenarios' figures
                errors[name] = f"{type(exc).__name__}: {exc}"
                traceback.print_exc()
            print(f"    {time.perf_counter() - t0:.1f}s", flush=True)
    except BaseException:
        print(f"bench: logs kept in {setup.log_dir}", file=sys.stderr)
        raise
    finally:
        procs.stop()
    return bench, errors


def main(argv: list[str] | None = None) -> int:
    args, only = parse_args(argv)
    variant = VARIANTS[args.variant]
    urls = bench_urls(variant)
    started = time.time()
    setup = prepare(variant, *urls, celery_events=args.celery_events)
    stamps = setup_django(setup)
    bench, errors = run_scenarios(variant, only, setup, stamps)
    result = build_result(
        variant=variant, setup=setup, started=started,
        figures=bench.figures, notes=bench.notes, errors=errors,
    )  # fmt: skip
    write_result(result, args.output)
    print(render(result))
    print(f"==> wrote bench/results/latest-{variant.name}.json ({result['duration_s']}s)")
    for name, error in errors.items():
        print(f"bench: scenario {name} failed: {error} (logs in {setup.log_dir})", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
