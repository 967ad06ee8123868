"""python manage.py metrics_rebuild: recompute the metrics' totals from the tables."""

from __future__ import annotations

from django.apps import apps
from django.core.management.base import BaseCommand
from django.db import transaction

from executions.metrics.seed import rebuild


class Command(BaseCommand):
    help = (
        "Recompute every metric total (/metrics) from the executions, tasks, events and "
        "attempts tables; histograms start empty. Run while no worker is recording."
    )

    def handle(self, *args: object, **options: object) -> None:
        with transaction.atomic():
            written = rebuild(apps.get_model)
        self.stdout.write(f"metrics rebuilt: {written} series")
