"""The wheel, installed into a fresh virtualenv outside the repository, runs with the
standalone project beside it.

What the Docker image does, without a container engine: install the wheel at the locked
versions (pip may take them from its cache; only package registries are reachable), put
the standalone project (config/ and manage.py, from the build context) in a folder of its
own, then, with nothing else of the repository importable, on the embedded defaults
(SQLite, the file broker) and production-like settings: `migrate`, `check --deploy` with
no warning, `collectstatic`, then gunicorn, a Celery worker and beat run a one-node
workflow through the REST API, and each container healthcheck passes.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from executions.supervisor import WORKER_READY, Supervisor, free_port, listening, logged
from tests.packaging.context import ROOT
from tests.packaging.fresh_venv import Installed, environment, install
from tests.waiting import eventually

#: Seconds to wait for the execution to end: a bound on a wait, not a speed assertion.
EXECUTION_WAIT_SECONDS = 120
HOST = "wf.example.com"
#: What the TLS proxy in front of gunicorn would send.
THROUGH_PROXY = {"Host": HOST, "X-Forwarded-Proto": "https"}


@dataclass
class Standalone(Installed):
    """The standalone project (manage.py in workdir) in the wheel's virtualenv."""

    def manage(self, *args: str, extra: dict[str, str] | None = None) -> str:
        return self.run(self.bin("python"), "manage.py", *args, extra=extra)


@pytest.fixture(scope="module")
def installed(wheel: Path, context: Path, tmp_path_factory: pytest.TempPathFactory) -> Standalone:
    base = tmp_path_factory.mktemp("installed")
    venv = install(wheel, base)
    workdir = base / "run"
    # The standalone project, as the image copies it from the build context.
    shutil.copytree(context / "config", workdir / "config")
    shutil.copy2(context / "manage.py", workdir / "manage.py")
    env = environment(
        venv,
        DJANGO_SETTINGS_MODULE="config.settings",
        PYTHONPATH=str(workdir),
        WORKFLOW_VAR_DIR=str(base / "var"),
        SECRET_KEY=secrets.token_urlsafe(50),
        DEBUG="0",
        ALLOWED_HOSTS=HOST,
        # Behind a TLS proxy, as in production: plain HTTP is redirected unless the
        # proxy's header says the request came over HTTPS.
        WORKFLOW_TLS="1",
        SECURE_SSL_REDIRECT="1",
        SECURE_HSTS_INCLUDE_SUBDOMAINS="1",
        SECURE_HSTS_PRELOAD="1",
        CSRF_TRUSTED_ORIGINS=f"https://{HOST}",
        SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO,https",
    )
    return Standalone(venv, workdir, env)


def test_the_apps_come_from_the_wheel_and_the_project_from_beside_it(
    installed: Standalone,
) -> None:
    where = installed.run(
        installed.bin("python"), "-c",
        "import config, executions, nodes, workflows; "
        "print(*(m.__file__ for m in (executions, nodes, workflows, config)), sep='\\n')",
    ).split()  # fmt: skip
    *apps, project = where
    assert all(path.startswith(str(installed.venv)) for path in apps), apps
    assert project.startswith(str(installed.workdir)), project
    assert not [path for path in where if path.startswith(str(ROOT))], where


def test_check_deploy_with_production_settings_has_no_warning(installed: Standalone) -> None:
    out = installed.manage("check", "--deploy", "--fail-level", "WARNING")
    assert "System check identified no issues" in out, out


@pytest.fixture(scope="module")
def running(installed: Standalone) -> Iterator[tuple[Standalone, str, int]]:
    """migrate, collectstatic, an admin token, then gunicorn, a worker and beat."""
    installed.manage("migrate", "--noinput", "-v", "0")
    installed.manage("collectstatic", "--noinput", "-v", "0")
    installed.manage(
        "createsuperuser", "--noinput", "--username", "admin", "--email", "admin@example.com",
        extra={"DJANGO_SUPERUSER_PASSWORD": secrets.token_urlsafe(16)},
    )  # fmt: skip
    token = re.search(r"Generated token (\w+)", installed.manage("drf_create_token", "admin"))
    assert token, "drf_create_token printed no token"
    port = free_port()
    python = installed.bin("python")
    supervisor = Supervisor(installed.workdir / "logs", env=installed.env, cwd=installed.workdir)
    gunicorn = [python, "-m", "gunicorn", "config.wsgi", "-b", f"127.0.0.1:{port}", "-w", "1"]
    worker = [python, "-m", "celery", "-A", "config", "worker", "-l", "info",
              "-Q", "orchestrator,nodes", "--concurrency", "1"]  # fmt: skip
    beat = [python, "-m", "celery", "-A", "config", "beat", "-l", "info",
            "-s", str(installed.workdir / "beat-schedule")]  # fmt: skip
    try:
        started = [
            supervisor.start("web", gunicorn, ready=listening("127.0.0.1", port)),
            supervisor.start("worker", worker, ready=logged(WORKER_READY)),
            supervisor.start("beat", beat),
        ]
        for process in started:
            process.wait_ready()
        yield installed, token[1], port
    finally:
        logs = supervisor.logs()
        supervisor.stop()
        print(logs)  # shown by pytest when a test of this module failed


def api(port: int, token: str, method: str, path: str, body: object | None = None) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={
            **THROUGH_PROXY,
            "Authorization": f"Token {token}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def test_a_one_node_workflow_runs_from_the_installed_package(running) -> None:
    _, token, port = running
    definition = {
        "nodes": [
            {"id": "hello", "type": "function", "function": "std.echo",
             "input": {"greeting": "hello {{ input.name }}"}},
        ],
        "output": "{{ nodes.hello.output }}",
    }  # fmt: skip
    api(port, token, "POST", "/workflows", {"name": "from-the-wheel", "definition": definition})
    started = api(port, token, "POST", "/executions", {"workflow": "from-the-wheel",
                                                       "input": {"name": "wheel"}})  # fmt: skip

    def ended() -> dict:
        execution = api(port, token, "GET", f"/executions/{started['id']}")
        assert execution["status"] in ("succeeded", "failed", "cancelled"), execution
        return execution

    execution = eventually(ended, EXECUTION_WAIT_SECONDS, "the execution never ended", interval=0.2)
    assert execution["status"] == "succeeded", execution
    assert execution["output"] == {"greeting": "hello wheel"}


def test_static_files_and_templates_come_with_the_package(running) -> None:
    installed, _, port = running
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/static/admin/css/base.css",
        headers={**THROUGH_PROXY, "Accept-Encoding": "gzip"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200
        assert response.headers["Content-Encoding"] == "gzip"  # collected and compressed
    installed.run(
        installed.bin("python"), "-c",
        "from importlib.resources import files; "
        "assert 'redoc' in files('workflows').joinpath('templates/workflows/redoc.html')"
        ".read_text()",
    )  # fmt: skip


def test_the_container_healthchecks_pass(running) -> None:
    installed, _, port = running
    probe = [installed.bin("python"), "-m", "executions.metrics.probe"]
    assert "web: healthy" in installed.run(*probe, "web", "--port", str(port))
    assert "worker: healthy" in installed.run(*probe, "worker")

    def beat_probe() -> str:
        done = subprocess.run(
            [*probe, "beat"], cwd=installed.workdir, env=installed.env,
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    # Beat ticks at least every 5 s; give its first tick that long at most.
    stdout = eventually(beat_probe, 30, "the beat probe never passed", interval=1)
    assert "beat: healthy" in stdout
