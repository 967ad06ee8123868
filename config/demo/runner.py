"""One demo run: migrate, an admin with a token, the children up, the workflow followed live.

Ctrl-C, SIGTERM and SIGHUP stop the children; so does the end of the execution with
`exit_when_done`. Returns the exit code.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from typing import Any

import httpx
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connections

from config.demo.client import (
    DemoClient,
    DemoError,
    start_execution,
    wait_for_web,
)
from config.demo.display import Clock, follow, report
from config.demo.processes import DemoProcesses, ProcessDied, Stop
from config.demo.sync import sync_demo_workflow
from executions.supervisor import port_open


class DemoUserUnusable(DemoError):
    """The `admin` user exists but cannot drive the demo; run_demo will not change it."""


def ensure_admin(out: Callable[[str], None]) -> str:
    """A superuser `admin` and its API token. Made (password `admin`) only when no user of
    that name exists: an existing user is never changed, its password least of all."""
    from rest_framework.authtoken.models import Token

    User = get_user_model()
    user = User.objects.filter(username="admin").first()
    if user is None:
        user = User.objects.create_superuser("admin", "admin@example.com", "admin")
        out("Superuser admin created (password admin: a demo machine only)")
    elif not (user.is_active and user.is_superuser):
        raise DemoUserUnusable(
            "user 'admin' exists but is not an active superuser; run_demo never changes an "
            "existing user: make it one in the admin, or run the demo on a fresh database"
        )
    else:
        out("Superuser admin exists: using it as it is (its password is unchanged)")
    token, _ = Token.objects.get_or_create(user=user)
    out(f"API token {token.key}")
    return token.key


class Demo:
    def __init__(self, options: dict[str, Any], out: Callable[[str], None], err):
        self.options = options
        self.out = out
        self.err = err
        self.supervisor = DemoProcesses(out)
        self.done = False
        self.clock = Clock()

    def run(self) -> int:
        """The exit code; the children are stopped whatever happens."""
        code = 1

        def on_signal(signum, frame):
            raise Stop(signal.Signals(signum).name)

        previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGHUP)}
        try:
            code = self.run_demo()
        except (KeyboardInterrupt, Stop):
            self.out("")
            code = 0 if self.done else 130
        except ProcessDied as exc:
            self.err(f"\nrun_demo: {exc} early; last lines of {exc.process.log_path}:")
            self.err(exc.process.tail())
            code = 1
        except DemoError as exc:
            self.err(f"\nrun_demo: {exc}")
            for child in self.supervisor.children:
                self.err(f"  (log: {child.log_path})")
            code = 1
        finally:
            self.supervisor.stop()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return code

    def run_demo(self) -> int:
        host, port = self.options["host"], self.options["port"]
        base_url = f"http://{host}:{port}"

        self.out("Preparing the database (migrate) …")
        call_command("migrate", interactive=False, verbosity=0)
        token = ensure_admin(self.out)
        version, definition = sync_demo_workflow(self.out)
        connections.close_all()  # SQLite: hold no lock while the children start

        if port_open(host, port):
            raise DemoError(f"{host}:{port} is already in use; pick another one with --port N")
        self.supervisor.start(host, port)
        with httpx.Client(
            base_url=base_url,
            headers={"Authorization": f"Token {token}", "Accept": "application/json"},
            timeout=10.0,
        ) as http:
            client = DemoClient(http, self.supervisor.check)
            wait_for_web(client, base_url, self.options["startup_timeout"], self.clock, self.out)
            execution_id = start_execution(client, version, self.clock, self.out)
            execution = follow(
                client, execution_id, definition, self.options["timeout"], self.clock, self.out
            )
            self.done = True
            report(client, execution, execution_id, base_url, token, self.out)

        succeeded = execution.get("status") == "succeeded"
        if self.options["exit_when_done"]:
            return 0 if succeeded else 1
        self.out("Web, worker and beat keep running; press Ctrl-C to stop them.")
        while True:
            self.supervisor.check()
            time.sleep(1.0)
