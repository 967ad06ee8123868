import logging.config
import os
from typing import Any

from celery import Celery
from celery.signals import (
    setup_logging,
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_process_init.connect
def _pool_child_started(**_: object) -> None:
    """A prefork pool child may end itself when an attempt overstays its hard limit: the
    pool replaces it (executions/worker/watchdog.py). Sent only in pool children, never in
    the main process of a solo or threads pool, where exiting would stop the whole worker."""
    from executions.worker import watchdog

    watchdog.replace_process_on_expiry = True


@setup_logging.connect
def _logging(loglevel: Any = None, **_: object) -> None:
    """Workers and beat log like the web processes (settings.LOGGING: JSON lines with the
    engine's context, or plain), at the level given by `-l`, instead of Celery's format."""
    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)
    if loglevel:
        logging.getLogger().setLevel(loglevel)


@task_prerun.connect
def _fresh_log_context(**_: object) -> None:
    """Each task's log lines carry its own context, not the previous task's."""
    from workflows import logs

    logs.clear()


@task_prerun.connect
@task_postrun.connect
def _close_old_connections(task: Any = None, **_: object) -> None:
    """What Django does around a request, around a task: close a connection that is past
    CONN_MAX_AGE, failed, or left in a transaction, and health-check the next use of the
    others (CONN_HEALTH_CHECKS), so a database restart costs one task a reconnect, not a
    failure. Celery's own per-task close is off (settings.CELERY_DB_REUSE_MAX). Not for an
    eager task or inside a transaction (a test's): the caller's connection is not ours."""
    from django.db import close_old_connections, connections

    if task is not None and getattr(task.request, "is_eager", False):
        return
    if any(conn.in_atomic_block for conn in connections.all(initialized_only=True)):
        return
    close_old_connections()


@worker_init.connect
def _tracing(**_: object) -> None:
    """Export spans where WORKFLOW_OTEL_EXPORTER says (nodes/tracing.py); the prefork
    children inherit the provider (OpenTelemetry restarts its export thread after fork)."""
    from nodes import tracing
    from workflows.conf import engine_settings

    tracing.configure(exporter=engine_settings.OTEL_EXPORTER)
