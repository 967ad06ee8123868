"""The chaos run: `python -m tests.chaos.run small|full [--executions N] [--seed S]
[--scenario all|dag|exactly]`.

On PostgreSQL + Redis: a fresh database (`workflow_chaos`, migrated), a dedicated Redis
database, 3 workers and 1 beat. Scenario `dag`: N executions of a 10-node DAG are started
over the REST API while a chaos loop kill -9s a random worker every few seconds (and starts
a replacement), restarts Redis once and PostgreSQL once. Scenario `exactly`
(tests/chaos/exactly.py): executions of a transactional step and its plain twin, each
writing one row, under worker kills only; its report counts the rows per execution of
each. Then every promise is checked (tests/chaos/checks.py), the figures printed and
written to tests/chaos/results/<variant>-<timestamp>.json. Exit status 0 only if every
check holds.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import traceback
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

from tests.chaos.cluster import ROOT, Cluster, ensure_services
from tests.chaos.common import say

RESULTS = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Variant:
    executions: int
    #: Executions running at once at most (the API is not flooded beyond the workers).
    in_flight: int
    #: Seconds between two worker kills, drawn uniformly from this range.
    kill_every: tuple[float, float]
    #: The whole run fails if the executions are not all over by then.
    timeout: float


VARIANTS = {
    "small": Variant(executions=50, in_flight=25, kill_every=(3.0, 6.0), timeout=900),
    "full": Variant(executions=1000, in_flight=40, kill_every=(4.0, 8.0), timeout=4 * 3600),
}
#: The exactly-once scenario's (tests/chaos/exactly.py), by variant: kills only.
EXACTLY = {
    "small": Variant(executions=40, in_flight=12, kill_every=(2.0, 4.0), timeout=600),
    "full": Variant(executions=300, in_flight=16, kill_every=(3.0, 6.0), timeout=3600),
}
WORKERS = 3
#: Redis databases 0 (tests), 2-3 (bench) are other people's: the chaos broker is its own.
CHAOS_REDIS_DB = 7


def chaos_urls() -> tuple[str, str]:
    """(database URL, broker URL) for the run: a dedicated database and Redis database on
    the servers the environment names (WORKFLOW_CHAOS_*_URL override both)."""
    database = os.environ.get("WORKFLOW_CHAOS_DATABASE_URL")
    if not database:
        base = os.environ.get("DATABASE_URL", "")
        if not base.startswith(("postgres://", "postgresql://")):
            base = os.environ.get(
                "WORKFLOW_TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/workflow"
            )
        database = urlsplit(base)._replace(path="/workflow_chaos").geturl()
    broker = os.environ.get("WORKFLOW_CHAOS_BROKER_URL")
    if not broker:
        base = os.environ.get("CELERY_BROKER_URL", "")
        if not base.startswith(("redis://", "rediss://")):
            base = os.environ.get("WORKFLOW_TEST_BROKER_URL", "redis://127.0.0.1:6379/0")
        broker = urlsplit(base)._replace(path=f"/{CHAOS_REDIS_DB}").geturl()
    return database, broker


def fresh_database(url: str) -> None:
    import psycopg
    from psycopg import sql

    name = urlsplit(url).path.lstrip("/")
    admin = urlsplit(url)._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def prepare(database: str, broker: str, run_dir: Path) -> dict[str, str]:
    """Fresh database and broker, migrated; this process configured for them. Returns the
    environment of the worker and beat processes."""
    import redis

    ensure_services(database, broker)
    fresh_database(database)
    redis.Redis.from_url(broker).flushdb()
    env = {
        **os.environ,
        "DATABASE_URL": database,
        "CELERY_BROKER_URL": broker,
        "WORKFLOW_VAR_DIR": str(run_dir / "var"),
        "PYTHONPATH": str(ROOT),
        "WORKFLOW_HTTP_ALLOWED_HOSTS": "127.0.0.1",
        "WORKFLOW_CHAOS_RUN_LOG": str(run_dir / "runs.log"),
        # Messages lost with a killed worker or a restarted Redis are republished soon.
        "WORKFLOW_REPUBLISH_AFTER_SECONDS": "5",
        "WORKFLOW_SWEEP_INTERVAL": "1",
        # The standalone project's, with the test-only ledger app (tests/ledger/).
        "DJANGO_SETTINGS_MODULE": "tests.chaos.settings",
    }
    migrate = [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"]
    subprocess.run(migrate, cwd=ROOT, env=env, check=True, timeout=300)
    for key in ("DATABASE_URL", "CELERY_BROKER_URL", "WORKFLOW_VAR_DIR", "DJANGO_SETTINGS_MODULE"):
        os.environ[key] = env[key]
    import django

    django.setup()
    import logging

    from workflows.conf import engine_settings

    # A publish refused while Redis restarts, and a request failing while PostgreSQL does,
    # are expected here: the sweeper republishes, the client repeats (counted in the report).
    logging.getLogger("executions.messages").setLevel(logging.ERROR)
    logging.getLogger("django.request").setLevel(logging.CRITICAL)
    modules = [*engine_settings.FUNCTION_MODULES, "tests.chaos.functions"]
    env["WORKFLOW_FUNCTION_MODULES"] = ",".join(modules)
    import tests.chaos.functions  # noqa: F401  (the API validates the DAG's functions)

    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("variant", choices=sorted(VARIANTS))
    parser.add_argument("--executions", type=int, help="override the variant's count")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--keep-logs", action="store_true", help="keep logs even on success")
    parser.add_argument(
        "--scenario",
        choices=["all", "dag", "exactly"],
        default="all",
        help="run only one scenario (each on the run's database, one after the other)",
    )
    parser.add_argument(
        "--no-restarts",
        action="store_true",
        help="kill workers only, never restart Redis/PostgreSQL (a run that proves less: "
        "for working on the runner while others use the servers)",
    )
    args = parser.parse_args(argv)
    variant = VARIANTS[args.variant]
    if args.executions:
        variant = Variant(args.executions, variant.in_flight, variant.kill_every, variant.timeout)
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    run_dir = RESULTS / f"{args.variant}-{stamp}"
    (run_dir / "logs").mkdir(parents=True)
    # Two runs at once would drop each other's database: one at a time on this checkout.
    lock = open(RESULTS / ".lock", "w")  # noqa: SIM115 - held until the process exits
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        say("another chaos run is in progress (tests/chaos/results/.lock); not starting")
        shutil.rmtree(run_dir, ignore_errors=True)
        return 2
    database, broker = chaos_urls()
    say(f"{args.variant} ({args.scenario}): {variant.executions} DAG executions, seed {seed}")
    say(f"database {database}, broker {broker}, logs {run_dir}")

    def terminate(*_):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminate)
    report: dict = {"variant": args.variant, "seed": seed, "started_at": stamp}
    ok = False
    cluster = None
    try:
        env = prepare(database, broker, run_dir)
        from tests.chaos.campaign import Campaign, api_client
        from tests.chaos.exactly import ExactlyOnce

        ok = True
        if args.scenario in ("all", "dag"):
            cluster = Cluster(env=env, log_dir=run_dir / "logs")
            campaign = Campaign(cluster, variant, random.Random(seed), database, broker, run_dir)
            campaign.restarts = not args.no_restarts
            ok = campaign.run(report)
            cluster.stop()
        if args.scenario in ("all", "exactly"):
            scenario = EXACTLY[args.variant]
            if args.executions:
                scenario = replace(scenario, executions=args.executions)
            cluster = Cluster(env=env, log_dir=run_dir / "logs" / "exactly")
            exactly = ExactlyOnce(cluster, scenario, random.Random(seed), run_dir)
            ok = exactly.run(api_client(), report.setdefault("exactly", {})) and ok
    except Exception:
        report.setdefault("errors", []).append(traceback.format_exc())
        say(f"the run broke:\n{traceback.format_exc()}")
    finally:
        if cluster is not None:
            cluster.stop()
        ensure_services(database, broker)
    report["passed"] = ok
    out = RESULTS / f"{args.variant}-{stamp}.json"
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print_summary(report)
    say(f"results written to {out}")
    if ok and not args.keep_logs:
        shutil.rmtree(run_dir, ignore_errors=True)
    elif not ok:
        say(f"logs kept in {run_dir}")
    return 0 if ok else 1


def print_summary(report: dict) -> None:
    print()
    print(f"chaos {report['variant']}: {'PASSED' if report['passed'] else 'FAILED'}")
    checks = list(report.get("checks", {}).items())
    if "chaos" in report:
        print_dag(report)
    exactly = report.get("exactly")
    if exactly:
        from tests.chaos.exactly import print_summary as print_exactly

        print_exactly(exactly)
        checks += [(f"exactly-once: {k}", v) for k, v in exactly.get("checks", {}).items()]
    for name, problems in checks:
        mark = "ok  " if not problems["count"] else "FAIL"
        print(f"  [{mark}] {name}" + (f": {problems['count']}" if problems["count"] else ""))
        for line in problems["examples"]:
            print(f"         {line}")
    failed = sum(1 for _, problems in checks if problems["count"])
    # The plain closing line CI tooling reads: one check = one test.
    print(f"chaos: {len(checks) - failed} passed, {failed} failed")


def print_dag(report: dict) -> None:
    figures = report.get("figures", {})
    chaos = report.get("chaos", {})
    rows = [
        ("executions", report.get("executions")),
        ("succeeded", figures.get("succeeded")),
        ("duration (s)", report.get("duration_seconds")),
        ("worker kills (kill -9)", chaos.get("kills")),
        ("unplanned process deaths", len(chaos.get("deaths", []))),
        ("Redis restarts", len(chaos.get("redis", []))),
        ("PostgreSQL restarts", len(chaos.get("postgres", []))),
        ("attempts", figures.get("attempts")),
        ("retries", figures.get("retries")),
        ("timeouts", figures.get("timeouts")),
        ("  by cause", figures.get("timeouts_by_cause")),
        ("task failures", figures.get("failures")),
        ("sweeper did", figures.get("sweeper")),
        ("task errors (recovered)", figures.get("task_errors")),
        ("worker DB calls retried", figures.get("db_retries")),
        ("node bodies run", figures.get("body_runs")),
        ("HTTP requests", figures.get("http_requests")),
        ("events", figures.get("events")),
        ("peaks at once (limits)", figures.get("limit_peaks")),
    ]
    for label, value in rows:
        print(f"  {label:<28} {value}")


if __name__ == "__main__":
    sys.exit(main())
