"""Liveness of what every request and task needs: the database and the broker."""

from __future__ import annotations

from collections.abc import Callable

from django.db import connection
from kombu import Connection

from config.celery import app

#: Seconds a check may take: a load balancer's probe must not hang on a dead server.
BROKER_TIMEOUT = 2.0

_MAX_ERROR = 300


def database_check() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def broker_connection() -> Connection:
    return app.connection_for_write(connect_timeout=BROKER_TIMEOUT)


def broker_check() -> None:
    with broker_connection() as conn:
        # One retry, at once: a probe answers now, it does not wait out an outage.
        conn.ensure_connection(max_retries=1, interval_start=0, timeout=BROKER_TIMEOUT)


CHECKS: dict[str, Callable[[], None]] = {"database": database_check, "broker": broker_check}


def health_report() -> tuple[bool, dict[str, str]]:
    """(all ok, {"status", <component>: "ok" or its error}) after running every check."""
    body: dict[str, str] = {}
    for name, check in CHECKS.items():
        try:
            check()
        except Exception as exc:  # any failure is the answer, not an error of the probe
            body[name] = f"{type(exc).__name__}: {exc}"[:_MAX_ERROR]
        else:
            body[name] = "ok"
    healthy = all(value == "ok" for value in body.values())
    return healthy, {"status": "ok" if healthy else "unavailable", **body}
