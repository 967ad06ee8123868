"""What the engine needs from every Celery worker, hooked up by the engine itself
(ExecutionsConfig.ready), so that a project's own Celery app, made the standard way,
runs workers the engine can rely on.

Celery's signals are global: connected in every process that loads the apps, they only
ever fire in workers.
"""

from __future__ import annotations

from typing import Any

from celery.signals import task_postrun, task_prerun, worker_init, worker_process_init
from django.db import close_old_connections, connections

from executions.worker import watchdog
from nodes import tracing
from workflows import logs
from workflows.conf import engine_settings


def pool_child_started(**_: object) -> None:
    """A prefork pool child may end itself when an attempt overstays its hard limit: the
    pool replaces it (watchdog.py). Sent only in pool children, never in the main process
    of a solo or threads pool, where exiting would stop the whole worker."""
    watchdog.replace_process_on_expiry = True


def fresh_log_context(**_: object) -> None:
    """Each task's log lines carry its own context, not the previous task's."""
    logs.clear()


def close_stale_connections(task: Any = None, **_: object) -> None:
    """What Django does around a request, around a task: close a connection that is past
    CONN_MAX_AGE, failed, or left in a transaction, and health-check the next use of the
    others (CONN_HEALTH_CHECKS), so a database restart costs one task a reconnect, not a
    failure. Not for an eager task or inside a transaction (a test's): the caller's
    connection is not ours."""
    if task is not None and getattr(task.request, "is_eager", False):
        return
    if any(conn.in_atomic_block for conn in connections.all(initialized_only=True)):
        return
    close_old_connections()


def start_tracing(**_: object) -> None:
    """Export spans where WORKFLOW_OTEL_EXPORTER says (tracing.py); the prefork children
    inherit the provider (OpenTelemetry restarts its export thread after fork)."""
    tracing.configure(exporter=engine_settings.OTEL_EXPORTER)


def connect() -> None:
    worker_process_init.connect(pool_child_started, dispatch_uid="workflows.pool-child")
    task_prerun.connect(fresh_log_context, dispatch_uid="workflows.log-context")
    task_prerun.connect(close_stale_connections, dispatch_uid="workflows.connections-before")
    task_postrun.connect(close_stale_connections, dispatch_uid="workflows.connections-after")
    worker_init.connect(start_tracing, dispatch_uid="workflows.tracing")
