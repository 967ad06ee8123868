"""Celery beat's scheduler: django-celery-beat's DatabaseScheduler, which also records that
its loop is turning, for the beat container's healthcheck (`python -m monitoring.probe beat`).

Beat answers no control messages (`celery inspect ping` reaches workers only), so its
liveness is the age of a heartbeat file: every tick touches it, and beat ticks at least
every max_interval seconds (5 for this scheduler) and whenever an entry is due (the
sweeper's, every WORKFLOW_SWEEP_INTERVAL).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from django.conf import settings
from django_celery_beat.schedulers import DatabaseScheduler


def heartbeat_path() -> Path:
    return Path(settings.VAR_DIR) / "beat.heartbeat"


class Scheduler(DatabaseScheduler):
    def tick(self, *args: Any, **kwargs: Any) -> float:
        # A full or read-only disk fails the healthcheck, never the schedule.
        with contextlib.suppress(OSError):
            heartbeat_path().touch()
        return super().tick(*args, **kwargs)
