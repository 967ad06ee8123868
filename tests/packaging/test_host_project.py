"""The engine inside a Django team's own project, from the built wheel.

A fresh project (`django-admin startproject config`: the colliding name on purpose) in a
fresh virtualenv outside the repository adds the engine as the docs tell a host:
its apps, one URL line, a standard Celery app, its own PostgreSQL database and Redis
broker, and no engine setting. Its own gunicorn, worker and beat, started the standard
way, then run what a host does: a view starts a workflow inside its transaction, Python
code waits for results, a receiver hears every execution end, and the host's own API keeps
its own defaults while the engine's keeps its permissions.

Runs on PostgreSQL + Redis (the first pass of ./dev test); the embedded-defaults pass has
no PostgreSQL to give the host, and skips it.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import dj_database_url
import httpx
import psycopg
import pytest
import redis
from psycopg import sql

from executions.supervisor import WORKER_READY, Supervisor, free_port, listening, logged
from tests.ci import missing
from tests.packaging.context import ROOT
from tests.packaging.fresh_venv import Installed, environment, install
from tests.packaging.host_project import WORKFLOWS, make_host
from tests.waiting import eventually, scaled

# Building the wheel, installing it and migrating a new database come first: far past the
# suite's per-test default on a loaded machine. A bound, not a speed assertion.
pytestmark = pytest.mark.timeout(1200)

#: Seconds to wait for an execution to end: a bound on a wait, not a speed assertion.
EXECUTION_WAIT_SECONDS = 120
#: Redis has 16 databases; the host takes the one this far from the run's own, whose
#: workers (the integration tests') must neither take its messages nor lose theirs to
#: its flush. WORKFLOW_TEST_HOST_BROKER_URL names another.
BROKER_DB_OFFSET = 8
TERMINAL = ("succeeded", "failed", "cancelled")


@dataclass(frozen=True)
class Services:
    #: Django's DATABASES["default"] for the host's own database.
    database: dict[str, str]
    broker_url: str


def run_services() -> tuple[str, str]:
    """The test run's PostgreSQL and Redis URLs; skips when it runs on the embedded
    defaults, which have neither."""
    database_url = os.environ.get("DATABASE_URL", "")
    if not database_url.startswith(("postgres://", "postgresql://")):
        pytest.skip(
            "the host project needs PostgreSQL: DATABASE_URL is not a postgres:// URL "
            "(the embedded-defaults pass of ./dev test)"
        )
    broker_url = os.environ.get("CELERY_BROKER_URL", "")
    if not broker_url.startswith("redis://"):
        missing("the host project needs Redis: set CELERY_BROKER_URL to a redis:// URL")
    return database_url, broker_url


def host_broker_url(run_broker_url: str) -> str:
    if configured := os.environ.get("WORKFLOW_TEST_HOST_BROKER_URL"):
        return configured
    parts = urlsplit(run_broker_url)
    db = int(parts.path.strip("/") or 0)
    return urlunsplit(parts._replace(path=f"/{(db + BROKER_DB_OFFSET) % 16}"))


@pytest.fixture(scope="module")
def services() -> Iterator[Services]:
    """A new PostgreSQL database of the host's own, dropped at the end, and a Redis
    database flushed at the start."""
    database_url, run_broker_url = run_services()
    run_database = dj_database_url.parse(database_url)
    name = f"{run_database['NAME']}_hostproject_{secrets.token_hex(4)}"
    server = {
        "ENGINE": "django.db.backends.postgresql",
        "HOST": str(run_database["HOST"]),
        "PORT": str(run_database["PORT"]),
        "USER": str(run_database["USER"]),
        "PASSWORD": str(run_database["PASSWORD"]),
    }
    broker = redis.Redis.from_url(host_broker_url(run_broker_url))
    broker.flushdb()
    with psycopg.connect(
        host=server["HOST"], port=server["PORT"], user=server["USER"],
        password=server["PASSWORD"] or None, dbname="postgres", autocommit=True,
    ) as admin:  # fmt: skip
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            yield Services({**server, "NAME": name}, host_broker_url(run_broker_url))
        finally:
            drop = sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name))
            admin.execute(drop)
            broker.flushdb()


@dataclass
class Host(Installed):
    """The host project (manage.py in workdir) in its virtualenv."""

    #: Both users' (the superuser's and the plain one's).
    password: str

    def manage(self, *args: str, extra: dict[str, str] | None = None, timeout: float = 300) -> str:
        return self.run(self.bin("python"), "manage.py", *args, extra=extra, timeout=timeout)

    def shell(self, code: str, timeout: float = 300) -> Any:
        """Run `code` in `manage.py shell`: the JSON of the last line it prints."""
        out = self.manage("shell", "-c", code, timeout=timeout)
        return json.loads(out.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def host(services: Services, wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Host:
    """startproject config, startapp shop, the host's edits, migrate, its workflow files
    synced, two users."""
    base = tmp_path_factory.mktemp("host")
    # The host's server is its own choice: it installs gunicorn itself.
    venv = install(wheel, base, "gunicorn")
    workdir = base / "project"
    workdir.mkdir()
    env = environment(venv, DJANGO_SETTINGS_MODULE="config.settings")
    host = Host(venv, workdir, env, password=secrets.token_urlsafe(16))
    host.run(host.bin("django-admin"), "startproject", "config", str(workdir))
    host.manage("startapp", "shop")
    make_host(workdir, database=services.database, broker_url=services.broker_url)
    host.manage("makemigrations", "shop", "-v", "0")
    host.manage("migrate", "--noinput", "-v", "0")
    synced = host.manage("sync_workflows")
    lines = sorted(line for line in synced.splitlines() if line.startswith(tuple(WORKFLOWS)))
    assert lines == [f"{name}: created" for name in sorted(WORKFLOWS)], synced
    host.manage(
        "createsuperuser", "--noinput", "--username", "admin", "--email", "admin@example.com",
        extra={"DJANGO_SUPERUSER_PASSWORD": host.password},
    )  # fmt: skip
    host.shell(
        "from django.contrib.auth.models import User; "
        f"User.objects.create_user('plain', password={host.password!r}); print('null')"
    )
    return host


@dataclass
class Running:
    host: Host
    url: str
    #: The superuser's DRF token: every engine permission.
    token: str
    supervisor: Supervisor

    def engine(self, method: str, path: str, body: object | None = None) -> httpx.Response:
        """The engine's API with the superuser's token."""
        headers = {"Authorization": f"Token {self.token}"}
        return httpx.request(
            method, f"{self.url}/engine/{path}", json=body, headers=headers, timeout=30
        )

    def login(self, username: str) -> httpx.Client:
        """A browser session logged in through the host's own login page."""
        client = httpx.Client(base_url=self.url, timeout=30)
        client.get("/accounts/login/").raise_for_status()
        form = {"username": username, "password": self.host.password}
        done = client.post(
            "/accounts/login/", data={**form, "csrfmiddlewaretoken": client.cookies["csrftoken"]}
        )
        assert done.status_code == 302, f"login of {username} refused: {done.text[:2000]}"
        return client


def post_form(client: httpx.Client, path: str, body: object) -> httpx.Response:
    """A POST from the host's own pages: the session's CSRF token in its header."""
    return client.post(path, json=body, headers={"X-CSRFToken": client.cookies["csrftoken"]})


@pytest.fixture(scope="module")
def running(host: Host) -> Iterator[Running]:
    """gunicorn, a worker and beat as a host runs them."""
    token = re.search(r"Generated token (\w+)", host.manage("drf_create_token", "admin"))
    assert token, "drf_create_token printed no token"
    port = free_port()
    supervisor = Supervisor(host.workdir / "logs", env=host.env, cwd=host.workdir)
    web = [host.bin("gunicorn"), "config.wsgi", "-b", f"127.0.0.1:{port}", "-w", "2"]
    worker = [host.bin("celery"), "-A", "config", "worker", "-Q", "celery,orchestrator,nodes",
              "-l", "info", "--concurrency", "2"]  # fmt: skip
    beat = [host.bin("celery"), "-A", "config", "beat", "-l", "info",
            "--scheduler", "django_celery_beat.schedulers:DatabaseScheduler"]  # fmt: skip
    try:
        started = [
            supervisor.start("web", web, ready=listening("127.0.0.1", port)),
            supervisor.start("worker", worker, ready=logged(WORKER_READY)),
            supervisor.start("beat", beat),
        ]
        for process in started:
            process.wait_ready(timeout=scaled(60))
        yield Running(host, f"http://127.0.0.1:{port}", token[1], supervisor)
    finally:
        logs = supervisor.logs()
        supervisor.stop()
        print(logs)  # shown by pytest when a test of this module failed


def test_the_hosts_config_is_its_own_and_nothing_of_the_repository_is_importable(
    host: Host,
) -> None:
    where = host.run(
        host.bin("python"), "-c",
        "import importlib.util, json, sys, config, workflows, executions, nodes; "
        "print(json.dumps({'files': [m.__file__ for m in (config, workflows, executions, nodes)],"
        " 'path': sys.path, 'tests': importlib.util.find_spec('tests') is not None}))",
    )  # fmt: skip
    found = json.loads(where.strip().splitlines()[-1])
    config, *engine = found["files"]
    assert config == str(host.workdir / "config" / "__init__.py")
    assert all(path.startswith(str(host.venv)) for path in engine), engine
    assert not [entry for entry in found["path"] if entry.startswith(str(ROOT))], found["path"]
    assert not found["tests"]


def test_the_host_sets_no_engine_setting(host: Host) -> None:
    settings = (host.workdir / "config" / "settings.py").read_text()
    assert "WORKFLOW_" not in settings
    assert re.findall(r"^CELERY_\w+", settings, flags=re.MULTILINE) == ["CELERY_BROKER_URL"]
    assert not [key for key in host.env if key.startswith(("WORKFLOW_", "CELERY_"))]


def test_a_start_in_a_rolled_back_transaction_leaves_nothing(running: Running) -> None:
    client = running.login("plain")
    refused = post_form(
        client, "/shop/orders/place-out-of-stock", {"item": "kite", "quantity": 1, "price": 9}
    )
    assert refused.status_code == 409, refused.text
    execution_id, order = refused.json()["execution"], refused.json()["order"]
    left = running.host.shell(
        "import json; from executions.models import Attempt, Event, Execution; "
        "from shop.models import Order\n"
        f"e = {execution_id!r}\n"
        "print(json.dumps([Execution.objects.filter(pk=e).count(), "
        "Event.objects.filter(execution_id=e).count(), "
        "Attempt.objects.filter(execution_id=e).count(), "
        f"Order.objects.filter(pk={order}).count()]))"
    )
    assert left == [0, 0, 0, 0], "execution, events, attempts, order"
    assert running.engine("GET", f"executions/{execution_id}").status_code == 404


def result_of(running: Running, execution_id: str) -> Any:
    """handle.result() in the host's own Python: the output, or what it raised."""
    timeout = scaled(EXECUTION_WAIT_SECONDS)
    return running.host.shell(
        "import json; from workflows import api\n"
        f"handle = api.get({execution_id!r})\n"
        "try:\n"
        f"    print(json.dumps({{'output': handle.result(timeout={timeout})}}))\n"
        "except api.WorkflowError as exc:\n"
        "    print(json.dumps({'raised': type(exc).__name__, 'message': str(exc),"
        " 'status': getattr(getattr(exc, 'execution', None), 'status', None)}))",
        timeout=timeout + 60,
    )


def test_a_start_in_a_committed_transaction_runs_to_the_end(running: Running) -> None:
    client = running.login("plain")
    placed = post_form(client, "/shop/orders/place", {"item": "kite", "quantity": 3, "price": 7})
    assert placed.status_code == 201, placed.text
    execution_id = placed.json()["execution"]
    assert result_of(running, execution_id) == {
        "output": {"total": 21, "key": f"{execution_id}:total"}
    }
    execution = running.engine("GET", f"executions/{execution_id}").json()
    assert execution["status"] == "succeeded", execution


def test_result_raises_execution_failed_when_the_function_raised(running: Running) -> None:
    started = running.host.shell(
        "import json; from workflows import api; "
        "print(json.dumps(str(api.start('refund', {'order': 12}, by='script').id)))"
    )
    outcome = result_of(running, started)
    assert outcome["raised"] == "ExecutionFailed", outcome
    assert outcome["status"] == "failed", outcome
    assert "order 12 cannot be refunded" in outcome["message"], outcome


def test_the_hosts_receiver_hears_each_ended_execution_once(running: Running) -> None:
    started = running.host.shell(
        "import json; from workflows import api; "
        "print(json.dumps(str(api.start('checkout', {'quantity': 1, 'price': 1}).id)))"
    )
    assert result_of(running, started) == {"output": {"total": 1, "key": f"{started}:total"}}
    seen = (
        "import json; from executions.models import Execution; from shop.models import Finished; "
        f"ended = Execution.objects.filter(status__in={TERMINAL!r}); "
        "print(json.dumps({"
        "'ended': sorted([str(e.pk), e.status] for e in ended),"
        " 'heard': sorted([str(f.execution_id), f.status] for f in Finished.objects.all())}))"
    )

    def all_heard() -> dict[str, list[list[str]]] | None:
        now = running.host.shell(seen)
        return now if len(now["heard"]) >= len(now["ended"]) else None

    now = eventually(all_heard, EXECUTION_WAIT_SECONDS, "the receiver never heard every end")
    assert [started, "succeeded"] in now["ended"]
    assert now["heard"] == now["ended"]  # once each, with the status it ended with


def test_the_hosts_own_api_keeps_its_permissions_and_pagination(running: Running) -> None:
    running.host.shell(
        "from shop.models import Order; "
        "Order.objects.bulk_create(Order(item=f'ball {n}', quantity=n, price=2) "
        "for n in range(1, 4)); print('null')"
    )
    assert httpx.get(f"{running.url}/shop/orders/").status_code == 403
    # The engine's token authentication is the engine's: the host's API does not take it.
    with_token = {"Authorization": f"Token {running.token}"}
    assert httpx.get(f"{running.url}/shop/orders/", headers=with_token).status_code == 403
    page = running.login("plain").get("/shop/orders/")
    assert page.status_code == 200, page.text
    body = page.json()
    assert body["count"] >= 3, body
    assert len(body["results"]) == 2, body
    assert body["next"], body
    assert "page=2" in body["next"], body


def test_the_engines_api_needs_the_engines_permissions(running: Running) -> None:
    plain, admin = running.login("plain"), running.login("admin")
    for path in ("/engine/executions", "/engine/workflows"):
        assert httpx.get(f"{running.url}{path}").status_code in (401, 403), path
        refused = plain.get(path)
        assert refused.status_code == 403, (path, refused.text)
        assert admin.get(path).status_code == 200, path
        assert running.engine("GET", path.removeprefix("/engine/")).status_code == 200, path


def test_the_sweeper_runs_in_the_hosts_beat(running: Running) -> None:
    def sweeping() -> dict[str, Any] | None:
        health = httpx.get(f"{running.url}/engine/healthz", timeout=30).json()
        return health if health["sweeper"]["state"] == "ok" else None

    health = eventually(sweeping, 60, "the host's beat never ran the sweeper", interval=0.5)
    assert health["status"] == "ok", health
