"""The daily purge: each ended execution kept as long as its version's definition says
("retention_days"), else WORKFLOW_RETENTION_DAYS; neither set keeps everything."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from executions.retention.selection import Criteria
from executions.services.purge import PurgeReport, executions_purge
from workflows import clock
from workflows.conf import engine_settings
from workflows.models import WorkflowVersion


def own_retention() -> dict[int, int]:
    """{version id: days} of the versions whose definition sets retention_days."""
    rows = WorkflowVersion.objects.filter(definition__has_key="retention_days").values_list(
        "pk", "definition__retention_days"
    )
    # Stored definitions were validated: a positive integer (bool is not one).
    return {pk: days for pk, days in rows if isinstance(days, int) and not isinstance(days, bool)}


def retention_purge(*, now: datetime | None = None) -> list[PurgeReport]:
    """Purge what has outlived its retention; one report per purge run (none: keep all)."""
    now = now or clock.now()
    own = own_retention()
    by_days: dict[int, set[int]] = defaultdict(set)
    for version_id, days in own.items():
        by_days[days].add(version_id)
    reports = [
        executions_purge(
            criteria=Criteria(cutoff=now - timedelta(days=days), versions=frozenset(versions))
        )
        for days, versions in sorted(by_days.items())
    ]
    default = engine_settings.RETENTION_DAYS
    if default is not None:
        criteria = Criteria(cutoff=now - timedelta(days=default), except_versions=frozenset(own))
        reports.append(executions_purge(criteria=criteria))
    return reports
