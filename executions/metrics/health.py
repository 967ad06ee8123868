"""Liveness of what every request and task needs (the database and the broker), and of
the sweeper, which every lease timeout, timer and lost message needs.

The status code answers for this process only (database and broker): a beat that stopped
does not make a load balancer take every web process out. The sweeper's state is in the
body, and its age in /metrics, for an alert (deploy/prometheus/alerts.yml).

The answer is public (a load balancer's probe carries no token), so it names what is down
and why in a few fixed words, never the error's own text: drivers put hosts, user names
and whole connection URLs into their messages. The full error goes to the server's log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from celery import current_app
from django.db import connection
from kombu import Connection

from executions.liveness import sweeper_status

#: Seconds a check may take: a load balancer's probe must not hang on a dead server.
BROKER_TIMEOUT = 2.0

log = logging.getLogger(__name__)

#: (words in the error's text, what the answer says), first match wins.
_REASONS = (
    (("refused",), "connection refused"),
    (("timed out", "timeout"), "timed out"),
    (("authentication", "password", "permission denied", "noauth"), "authentication failed"),
    (("name or service", "nodename", "getaddrinfo", "translate host"), "host not found"),
    (("does not exist",), "not found"),
)


def database_check() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def broker_connection() -> Connection:
    return current_app.connection_for_write(connect_timeout=BROKER_TIMEOUT)


def broker_check() -> None:
    with broker_connection() as conn:
        # One retry, at once: a probe answers now, it does not wait out an outage.
        # kombu takes a float timeout (seconds); its stubs say int.
        conn.ensure_connection(max_retries=1, interval_start=0, timeout=BROKER_TIMEOUT)  # type: ignore[arg-type]


CHECKS: dict[str, Callable[[], None]] = {"database": database_check, "broker": broker_check}


def reason(exc: BaseException) -> str:
    """Why a check failed, in fixed words that cannot carry a host, user or password."""
    text = str(exc).lower()
    for words, said in _REASONS:
        if any(word in text for word in words):
            return said
    return "failed (details in the server log)"


def sweeper_report() -> dict[str, object]:
    try:
        return sweeper_status().as_json()
    except Exception as exc:  # the database check above says why
        log.warning("health check sweeper failed", exc_info=True)
        return {"state": "unknown", "error": f"{type(exc).__name__}: {reason(exc)}"}


def health_report() -> tuple[bool, dict[str, object]]:
    """(database and broker ok, {"status", "database", "broker": "ok" or its error,
    "sweeper": its state and last completed sweep}) after running every check."""
    body: dict[str, object] = {}
    for name, check in CHECKS.items():
        try:
            check()
        except Exception as exc:  # any failure is the answer, not an error of the probe
            log.warning("health check %s failed", name, exc_info=True)
            body[name] = f"{type(exc).__name__}: {reason(exc)}"
        else:
            body[name] = "ok"
    healthy = all(value == "ok" for value in body.values())
    return healthy, {
        "status": "ok" if healthy else "unavailable",
        **body,
        "sweeper": sweeper_report(),
    }
