"""Where the bench runs: its own database and Redis dbs, the machine it describes."""

from __future__ import annotations

import contextlib
import os
import platform
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bench.variants import Variant

ROOT = Path(__file__).resolve().parent.parent

#: Each variant has its own database and Redis dbs, so a smoke run (CI, the test suite)
#: never drops the database under a full run on the same servers.
DATABASE_NAMES = {"full": "workflow_bench", "smoke": "workflow_bench_smoke"}
REDIS_DBS = {"full": (2, 3), "smoke": (4, 5)}


def bench_database_url(variant: str) -> str:
    explicit = os.environ.get("WORKFLOW_BENCH_DATABASE_URL")
    if explicit:
        return explicit
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/workflow")
    parts = urlsplit(base)
    if not parts.scheme.startswith("postgres"):
        raise SystemExit("bench: needs PostgreSQL (DATABASE_URL=postgres://...)")
    return urlunsplit(parts._replace(path=f"/{DATABASE_NAMES[variant]}"))


def redis_url(db: int) -> str:
    base = os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
    parts = urlsplit(base)
    if parts.scheme not in ("redis", "rediss"):
        raise SystemExit("bench: needs Redis (CELERY_BROKER_URL=redis://...)")
    return urlunsplit(parts._replace(path=f"/{db}"))


def recreate_database(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(path="/postgres", scheme="postgresql"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def machine() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as handle:
        for line in handle:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem_kb = 0
    with contextlib.suppress(OSError), open("/proc/meminfo") as handle:
        for line in handle:
            if line.startswith("MemTotal"):
                mem_kb = int(line.split()[1])
    return {
        "nproc": os.cpu_count(),
        "cpu_model": model,
        "ram_gb": round(mem_kb / 1024 / 1024, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


@dataclass(frozen=True)
class Setup:
    database_url: str
    broker_url: str
    result_url: str
    log_dir: Path
    env: dict[str, str]
    #: Celery task events (task-sent, task-received, ...) on both sides or on neither.
    celery_events: bool = False

    @property
    def database(self) -> str:
        return urlsplit(self.database_url).path.lstrip("/")


def bench_urls(variant: Variant) -> tuple[str, str, str]:
    """The database URL, the broker URL and the raw result backend URL of `variant`."""
    database_url = bench_database_url(variant.name)
    broker_db, result_db = REDIS_DBS[variant.name]
    broker_url = os.environ.get("BENCH_BROKER_URL") or redis_url(broker_db)
    result_url = os.environ.get("BENCH_RESULT_URL") or redis_url(result_db)
    return database_url, broker_url, result_url


def prepare(
    variant: Variant,
    database_url: str,
    broker_url: str,
    result_url: str,
    *,
    celery_events: bool = False,
) -> Setup:
    """A fresh database, a log directory, and this process's environment pointed at them.

    `celery_events`: both the engine (WORKFLOW_CELERY_EVENTS, on by default outside the
    bench) and raw Celery (bench/raw_app.py, off by Celery's default) send task events,
    or neither does: each costs a worker a few event messages per task, so one side
    sending them and the other not would tilt the comparison."""
    print(f"==> bench {variant.name}: database {urlsplit(database_url).path.lstrip('/')}, "
          f"broker {broker_url}, raw results {result_url}", flush=True)  # fmt: skip
    recreate_database(database_url)
    log_dir = Path(tempfile.mkdtemp(prefix="workflow-bench."))
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "CELERY_BROKER_URL": broker_url,
        "BENCH_BROKER_URL": broker_url,
        "BENCH_RESULT_URL": result_url,
        "WORKFLOW_VAR_DIR": str(log_dir / "var"),
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "WORKFLOW_CELERY_EVENTS": "1" if celery_events else "0",
        "BENCH_CELERY_EVENTS": "1" if celery_events else "0",
    }
    os.environ.update(env)
    return Setup(database_url, broker_url, result_url, log_dir, env, celery_events)


def setup_django(setup: Setup):
    """Django set up and migrated, both Redis dbs flushed; returns the stamp store client."""
    import django

    django.setup()
    import redis
    from django.core.management import call_command

    from config.celery import app as engine_app

    engine_app.set_current()
    call_command("migrate", verbosity=0)
    redis.Redis.from_url(setup.broker_url).flushdb()
    stamps = redis.Redis.from_url(setup.result_url)
    stamps.flushdb()
    return stamps
