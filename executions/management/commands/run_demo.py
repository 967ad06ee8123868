"""`python manage.py run_demo`: the whole system on one machine, with a live workflow.

Starts three real processes (web, Celery worker, Celery beat), then drives the sample
`user-signup` workflow through the REST API and prints what happens as it happens. The
processes keep running afterwards so that the admin, the API and the docs can be explored;
Ctrl-C stops them. `--exit-when-done` stops right after the execution ends instead
(exit 0 if it succeeded).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command, get_commands
from django.core.management.base import BaseCommand
from django.db import connections

WORKFLOW_NAME = "user-signup"
WORKFLOW_DESCRIPTION = "Sample signup: verify the account, create a workspace, then email and team."
DEMO_INPUT = {"user_id": 42, "email": "ada@example.com"}
DEFINITION_FILE = Path(settings.BASE_DIR) / "nodes" / "demo_workflow.json"
TERMINAL = {"succeeded", "failed", "cancelled"}
POLL_SECONDS = 0.5


class DemoError(Exception):
    """Something went wrong that a message explains; the demo stops with exit code 1."""


class Stop(Exception):
    """SIGTERM or SIGHUP arrived."""


class ChildDied(Exception):
    def __init__(self, child: Child):
        super().__init__(f"{child.name} exited with code {child.proc.returncode}")
        self.child = child


class Child:
    """A child process in its own session (Ctrl-C reaches only us), logging to a file."""

    def __init__(self, name: str, argv: list[str], log_dir: Path):
        self.name = name
        self.argv = argv
        self.log_path = log_dir / f"{name}.log"
        self.proc: subprocess.Popen | None = None

    def start(self, env: dict[str, str]) -> None:
        with open(self.log_path, "w") as log:
            log.write(f"# {datetime.now().isoformat(timespec='seconds')}  {' '.join(self.argv)}\n")
            log.flush()
            self.proc = subprocess.Popen(
                self.argv,
                cwd=settings.BASE_DIR,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def signal_group(self, sig: int) -> bool:
        """Send `sig` to the child's whole process group (celery's pool included)."""
        if self.proc is None:
            return False
        try:
            os.killpg(self.proc.pid, sig)
            return True
        except (ProcessLookupError, PermissionError):
            return False


class Command(BaseCommand):
    help = (
        "Run web + worker + beat and the sample user-signup workflow, printing each node's "
        "progress live; keeps the processes running until Ctrl-C."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1", help="web address (default 127.0.0.1)")
        parser.add_argument("--port", type=int, default=8000, help="web port (default 8000)")
        parser.add_argument(
            "--exit-when-done",
            action="store_true",
            help="stop everything once the execution ends; exit 0 if it succeeded, else 1",
        )
        parser.add_argument(
            "--timeout",
            type=float,
            default=120.0,
            help="seconds to wait for the execution to end (default 120)",
        )
        parser.add_argument(
            "--startup-timeout",
            type=float,
            default=60.0,
            help="seconds to wait for the web process to answer (default 60)",
        )

    # --- output ------------------------------------------------------------------------

    def out(self, message: str = "") -> None:
        self.stdout.write(message)
        self.stdout.flush()

    def elapsed(self) -> str:
        return f"+{time.monotonic() - self.t0:6.1f}s"

    # --- entry point -------------------------------------------------------------------

    def handle(self, *args, **options):
        self.options = options
        self.children: list[Child] = []
        self.done = False
        self.t0 = time.monotonic()
        code = 1

        def on_signal(signum, frame):
            raise Stop(signal.Signals(signum).name)

        previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGHUP)}
        try:
            code = self.run_demo()
        except (KeyboardInterrupt, Stop):
            self.out("")
            code = 0 if self.done else 130
        except ChildDied as exc:
            self.stderr.write(f"\nrun_demo: {exc} early; last lines of {exc.child.log_path}:")
            self.stderr.write(exc.child.tail())
            code = 1
        except DemoError as exc:
            self.stderr.write(f"\nrun_demo: {exc}")
            for child in self.children:
                self.stderr.write(f"  (log: {child.log_path})")
            code = 1
        finally:
            self.stop_children()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        sys.exit(code)

    def run_demo(self) -> int:
        host, port = self.options["host"], self.options["port"]
        base_url = f"http://{host}:{port}"

        self.out("Preparing the database (migrate) …")
        call_command("migrate", interactive=False, verbosity=0)
        token = self.ensure_admin()
        connections.close_all()  # SQLite: hold no lock while the children start

        if self.port_in_use(host, port):
            raise DemoError(f"{host}:{port} is already in use; pick another one with --port N")
        self.start_children(host, port)
        with httpx.Client(
            base_url=base_url,
            headers={"Authorization": f"Token {token}", "Accept": "application/json"},
            timeout=10.0,
        ) as http:
            self.http = http
            self.wait_for_web(base_url)
            version = self.upsert_workflow()
            execution_id = self.start_execution(version)
            execution = self.follow(execution_id)
            self.done = True
            self.report(execution, execution_id, base_url, token)

        succeeded = execution.get("status") == "succeeded"
        if self.options["exit_when_done"]:
            return 0 if succeeded else 1
        self.out("Web, worker and beat keep running; press Ctrl-C to stop them.")
        while True:
            self.check_children()
            time.sleep(1.0)

    # --- setup -------------------------------------------------------------------------

    def ensure_admin(self) -> str:
        from rest_framework.authtoken.models import Token

        User = get_user_model()
        user, created = User.objects.get_or_create(
            username="admin",
            defaults={"email": "admin@example.com", "is_staff": True, "is_superuser": True},
        )
        if created or not (user.is_staff and user.is_superuser and user.check_password("admin")):
            user.is_staff = user.is_superuser = user.is_active = True
            user.set_password("admin")
            user.save()
        token, _ = Token.objects.get_or_create(user=user)
        self.out(
            f"Superuser admin/admin {'created' if created else 'ready'}; API token {token.key}"
        )
        return token.key

    @staticmethod
    def port_in_use(host: str, port: int) -> bool:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            return False

    def start_children(self, host: str, port: int) -> None:
        log_dir = Path(settings.VAR_DIR) / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        python = sys.executable
        manage = str(Path(settings.BASE_DIR) / "manage.py")
        celery = [python, "-m", "celery", "-A", "config"]
        self.children = [
            # --insecure: serve the admin's static files although DEBUG is off.
            Child(
                "web",
                [python, manage, "runserver", f"{host}:{port}", "--noreload", "--insecure"],
                log_dir,
            ),
            Child(
                "worker",
                [
                    *celery,
                    "worker",
                    "-l",
                    "warning",
                    "--concurrency",
                    "2",
                    "-Q",
                    "orchestrator,nodes",
                ],
                log_dir,
            ),
            Child("beat", [*celery, "beat", "-l", "warning"], log_dir),
        ]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        for child in self.children:
            child.start(env)
        names = ", ".join(f"{c.name} (pid {c.proc.pid})" for c in self.children)
        self.out(f"Started {names}; logs in {log_dir}/")

    def check_children(self) -> None:
        for child in self.children:
            if not child.alive():
                raise ChildDied(child)

    def stop_children(self) -> None:
        running = [c for c in self.children if c.alive()]
        if not running:
            return
        stopping = time.monotonic()
        self.out("Stopping " + ", ".join(c.name for c in running) + " …")
        for child in running:
            child.proc.terminate()  # the leader only: celery stops its own pool
        deadline = time.monotonic() + 15.0
        try:
            while time.monotonic() < deadline and any(c.alive() for c in running):
                time.sleep(0.1)
        except (KeyboardInterrupt, Stop):
            pass  # a second Ctrl-C: don't wait any longer
        for child in self.children:
            # SIGKILL whatever is left in each group (a leader that hung, orphaned pool
            # processes); a group with no process left answers ProcessLookupError.
            child.signal_group(signal.SIGKILL)
            if child.proc is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.proc.wait(timeout=5)
        self.out(f"Stopped ({time.monotonic() - stopping:.1f}s).")

    def wait_for_web(self, base_url: str) -> None:
        deadline = time.monotonic() + self.options["startup_timeout"]
        while True:
            self.check_children()
            try:
                response = self.http.get("/executions")
                if response.status_code < 500:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise DemoError(
                    f"the web process did not answer on {base_url} within "
                    f"{self.options['startup_timeout']:.0f}s; see var/logs/web.log"
                )
            time.sleep(0.25)
        self.out(f"Web is up on {base_url} ({time.monotonic() - self.t0:.1f}s)")

    # --- the API -----------------------------------------------------------------------

    def call(self, method: str, url: str, expect: tuple[int, ...] = (200,), **kwargs) -> Any:
        try:
            response = self.http.request(method, url, **kwargs)
        except httpx.TransportError as exc:
            self.check_children()
            raise DemoError(f"{method} {url} failed: {exc}") from exc
        if response.status_code not in expect:
            raise DemoError(
                f"{method} {url} answered {response.status_code}: {response.text[:800]}"
            )
        try:
            return response.json() if response.content else None
        except ValueError as exc:
            raise DemoError(f"{method} {url} answered non-JSON: {response.text[:300]}") from exc

    def pages(self, url: str) -> Iterator[dict]:
        """Every item of a list endpoint, following `next` links."""
        next_url: str | None = url
        while next_url:
            body = self.call("GET", next_url)
            if isinstance(body, list):
                yield from body
                return
            yield from body.get("results", [])
            next_url = body.get("next")

    def upsert_workflow(self) -> int | None:
        try:
            definition = json.loads(DEFINITION_FILE.read_text())
        except (OSError, ValueError) as exc:
            raise DemoError(f"cannot read {DEFINITION_FILE}: {exc}") from exc
        self.definition = definition
        existing = next(
            (w for w in self.pages("/workflows") if w.get("name") == WORKFLOW_NAME), None
        )
        if existing is None:
            created = self.call(
                "POST",
                "/workflows",
                expect=(201,),
                json={
                    "name": WORKFLOW_NAME,
                    "description": WORKFLOW_DESCRIPTION,
                    "definition": definition,
                },
            )
            version = created.get("latest_version", 1)
            self.out(
                f"Created workflow {WORKFLOW_NAME} (id {created.get('id')}) version {version}"
                f" from {DEFINITION_FILE.relative_to(settings.BASE_DIR)}"
            )
            return version
        workflow_id = existing["id"]
        current = existing.get("definition")
        if current is None:
            current = self.call("GET", f"/workflows/{workflow_id}").get("definition")
        if current == definition:
            version = existing.get("latest_version")
            self.out(
                f"Workflow {WORKFLOW_NAME} exists; its latest version {version} already has "
                "this definition"
            )
            return version
        added = self.call(
            "POST",
            f"/workflows/{workflow_id}/versions",
            expect=(201,),
            json={"definition": definition},
        )
        version = added.get("version")
        self.out(
            f"Workflow {WORKFLOW_NAME} exists; added version {version} from "
            f"{DEFINITION_FILE.relative_to(settings.BASE_DIR)}"
        )
        return version

    def start_execution(self, version: int | None) -> str:
        body: dict[str, Any] = {"workflow": WORKFLOW_NAME, "input": DEMO_INPUT}
        if version is not None:
            body["version"] = version
        execution = self.call("POST", "/executions", expect=(201,), json=body)
        execution_id = execution["id"]
        self.t0 = time.monotonic()
        self.out("")
        self.out(
            f"Execution {execution_id} of {WORKFLOW_NAME} v{version} with input "
            f"{json.dumps(DEMO_INPUT)}"
        )
        return str(execution_id)

    # --- live view ---------------------------------------------------------------------

    def follow(self, execution_id: str) -> dict:
        order = {node["id"]: i for i, node in enumerate(self.definition.get("nodes", []))}
        width = max([len(n) for n in order] + [9])
        seen: dict[str, tuple] = {}
        last_status = None
        deadline = time.monotonic() + self.options["timeout"]
        while True:
            self.check_children()
            execution = self.call("GET", f"/executions/{execution_id}")
            tasks = list(self.pages(f"/executions/{execution_id}/tasks"))
            tasks.sort(
                key=lambda t: (order.get(t.get("node_id"), len(order)), str(t.get("node_id")))
            )
            status = execution.get("status")
            if status != last_status and status not in TERMINAL:
                last_status = status
                self.out(f"  {self.elapsed()}  {'execution':<{width}}  {status}")
            for task in tasks:
                node = str(task.get("node_id"))
                attempts = task.get("attempts")
                if isinstance(attempts, list):
                    attempts = len(attempts)
                key = (task.get("status"), attempts)
                if seen.get(node) != key:
                    seen[node] = key
                    self.out(
                        f"  {self.elapsed()}  {node:<{width}}  {self.task_note(task, attempts)}"
                    )
            if status in TERMINAL:
                self.out(f"  {self.elapsed()}  {'execution':<{width}}  {status}")
                return execution
            if time.monotonic() > deadline:
                self.out(
                    f"  {self.elapsed()}  still {status} after {self.options['timeout']:.0f}s;"
                    " giving up waiting (see var/logs/worker.log)"
                )
                return execution
            time.sleep(POLL_SECONDS)

    @staticmethod
    def task_note(task: dict, attempts: Any) -> str:
        status = str(task.get("status"))
        note = f"{status:<10}"
        if attempts:
            note += f" attempt {attempts}"
        if status == "retrying" and task.get("next_retry_at"):
            note += f", retry at {task['next_retry_at']}"
        if status in {"failed", "retrying"} and task.get("error"):
            error = task["error"]
            if isinstance(error, dict):
                error = error.get("message") or error.get("type") or error
            note += f"  ({str(error)[:100]})"
        return note.rstrip()

    def report(self, execution: dict, execution_id: str, base_url: str, token: str) -> None:
        status = execution.get("status")
        self.out("")
        self.out(f"Execution {execution_id} {status}.")
        if execution.get("error"):
            self.out("Error:  " + json.dumps(execution["error"], indent=2, default=str))
        self.out("Output: " + json.dumps(execution.get("output"), indent=2, default=str))

        events = list(self.pages(f"/executions/{execution_id}/events"))
        self.out("")
        self.out(f"Event log ({len(events)} events, the source of truth):")
        self.out(f"  {'seq':>4}  {'time':>7}  {'type':<26} {'node':<12} attempt")
        first = self.parse_time(events[0].get("timestamp")) if events else None
        for event in events:
            when = self.parse_time(event.get("timestamp"))
            offset = f"{(when - first).total_seconds():6.2f}s" if when and first else "      -"
            node = event.get("node_id") or "-"
            attempt = event.get("attempt")
            self.out(
                f"  {event.get('seq', '?'):>4}  {offset:>7}  {str(event.get('type')):<26} "
                f"{node:<12} {attempt if attempt is not None else '-'}"
            )

        logs = Path(settings.VAR_DIR) / "logs"
        self.out("")
        self.out("Where to look:")
        self.out(f"  admin     {base_url}/admin/   (user admin, password admin)")
        self.out(f"  API       {base_url}/workflows   {base_url}/executions")
        self.out(f"  docs      {base_url}/docs   (OpenAPI: {base_url}/schema)")
        self.out(f"  token     {token}")
        self.out(
            f"  try       curl -s -H 'Authorization: Token {token}' "
            f"{base_url}/executions/{execution_id}/events"
        )
        if "replay_execution" in get_commands():
            self.out(f"  replay    python manage.py replay_execution {execution_id} --verify")
        self.out(f"  logs      {logs}/web.log, worker.log, beat.log")
        self.out("")

    @staticmethod
    def parse_time(value: Any) -> datetime | None:
        if not isinstance(value, str):
            return None
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
