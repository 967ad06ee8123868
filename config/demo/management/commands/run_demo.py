"""`python manage.py run_demo`: the whole system on one machine, with a live workflow.

Starts three real processes (web, Celery worker, Celery beat), then drives the sample
`user-signup` workflow through the REST API and prints what happens as it happens. The
processes keep running afterwards so that the admin, the API and the docs can be explored;
Ctrl-C stops them. `--exit-when-done` stops right after the execution ends instead
(exit 0 if it succeeded). The logic lives in `config.demo`.
"""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand

from config.demo.runner import Demo


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

    def out(self, message: str = "") -> None:
        self.stdout.write(message)
        self.stdout.flush()

    def handle(self, *args, **options):
        sys.exit(Demo(options, out=self.out, err=self.stderr.write).run())
