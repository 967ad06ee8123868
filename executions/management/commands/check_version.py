"""manage.py check_version <workflow> <version> [--last N] [--json report.json]

Before a new version goes live: replays the last N recorded executions of the workflow
against it (executions/engine/counterfactual.py) and exits 1 if any would have decided
differently, naming each execution, the seq and why. Reads only: a step for a deployment
pipeline.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from executions.models import Execution
from executions.services import whatif
from workflows.models import WorkflowDefinition


class Command(BaseCommand):
    help = "Replay a workflow's last executions against a version; exit 1 if any diverges."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("workflow", help="the workflow's name or id")
        parser.add_argument("version", type=int, help="the version (its number) to replay them on")
        parser.add_argument("--last", type=int, default=20, help="how many executions")
        parser.add_argument("--json", default=None, help="also write the reports here")

    def handle(self, *args, **options) -> None:
        workflow = _workflow(options["workflow"])
        if options["last"] < 1:
            raise CommandError("--last must be at least 1")
        executions = list(
            Execution.objects.filter(workflow=workflow)
            .select_related("version")
            .order_by("-created_at")[: options["last"]]
        )
        if not executions:
            self.stdout.write(f"{workflow.name}: no executions to check")
            return
        try:
            version = whatif.version_of(executions[0], options["version"])
        except ValidationError as exc:
            raise CommandError(exc.messages[0]) from None
        reports, diverging = {}, 0
        for execution in executions:
            report = whatif.replay_report(execution=execution, version=version)
            reports[str(execution.pk)] = report.to_json()
            where = f"{execution.pk} (v{execution.version.version}, {execution.status})"
            if report.diverges_at is None:
                self.stdout.write(f"same      {where}")
            else:
                diverging += 1
                self.stdout.write(self.style.WARNING(f"DIVERGES  {where}: {report.reason}"))
        if options["json"]:
            Path(options["json"]).write_text(json.dumps(reports, indent=2, default=str))
        summary = f"{len(executions) - diverging} of {len(executions)} executions unchanged"
        if diverging:
            raise CommandError(f"{summary} under version {version.version}; {diverging} diverge")
        self.stdout.write(f"{summary} under version {version.version}")


def _workflow(ref: str) -> WorkflowDefinition:
    found = WorkflowDefinition.objects.filter(name=ref).first()
    if found is None and ref.isdigit():
        found = WorkflowDefinition.objects.filter(pk=int(ref)).first()
    if found is None:
        raise CommandError(f"no workflow named {ref!r}")
    return found
