"""Celery entry point of the daily purge beat sends (executions/beat.py)."""

from __future__ import annotations

import logging

from executions.services.retention import retention_purge
from workflows.celery import ORCHESTRATOR_QUEUE, engine_task

log = logging.getLogger(__name__)


# A purge lost with its worker is the next day's to finish (a purge resumes whole).
@engine_task(queue=ORCHESTRATOR_QUEUE, acks_late=False, reject_on_worker_lost=False)
def purge_expired() -> dict[str, int]:
    reports = retention_purge()
    totals = {
        "executions": sum(r.executions for r in reports),
        "events": sum(r.events for r in reports),
        "left": sum(r.left for r in reports),
    }
    if totals["executions"] or totals["left"]:
        log.info("retention: purged %(executions)s executions (%(events)s events), "
                 "left %(left)s trees for later", totals)  # fmt: skip
    return totals
