"""The standalone project's Celery app, made the standard way: the engine's tasks carry
their own options and queues, and the engine hooks up its worker signals itself
(executions/worker/hooks.py), so nothing of the engine's is configured here."""

import logging.config
import os
from typing import Any

from celery import Celery
from celery.signals import setup_logging

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@setup_logging.connect
def _logging(loglevel: Any = None, **_: object) -> None:
    """Workers and beat log like the web processes (settings.LOGGING: JSON lines with the
    engine's context, or plain), at the level given by `-l`, instead of Celery's format."""
    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)
    if loglevel:
        logging.getLogger().setLevel(loglevel)
