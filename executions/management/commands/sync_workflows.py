"""manage.py sync_workflows [--check] [--dry-run] [--last N]

Makes the database hold the definition files of the installed apps
(`<app>/workflows/<name>.json`): creates each workflow that does not exist and a new
version of each whose definition differs from its latest, printing one line per
workflow: `created`, `unchanged`, or `new version N` with what changed and the what-if
replay of the new version over the latest executions of the version it replaces. A file
that does not read or validate stops the run before anything is written.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from executions.services.whatif_summary import LATEST, what_if
from workflows.dsl import Definition
from workflows.files import FileProblems
from workflows.models import WorkflowVersion
from workflows.sync import Action, sync_apply, sync_plan


class Command(BaseCommand):
    help = (
        "Create or version the workflows defined in <app>/workflows/<name>.json files; "
        "--check exits 1 when anything would change."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--check",
            action="store_true",
            help="change nothing; exit 1 if anything would change (a CI guard)",
        )
        parser.add_argument("--dry-run", action="store_true", help="print, change nothing")
        parser.add_argument(
            "--last",
            type=int,
            default=LATEST,
            help=f"how many executions of a replaced version the what-if replays ({LATEST})",
        )

    def handle(self, *args, **options) -> None:
        if options["last"] < 1:
            raise CommandError("--last must be at least 1")
        writes = not (options["check"] or options["dry_run"])

        def replay(replaced: WorkflowVersion, candidate: Definition) -> str:
            return str(what_if(replaced=replaced, candidate=candidate, last=options["last"]))

        try:
            steps = sync_plan(replay=replay)
            if writes:
                sync_apply(steps)
        except FileProblems as exc:
            raise CommandError(f"{exc}\nNothing was written.") from None
        for step in steps:
            self.stdout.write(step.line())
        changing = sum(step.action != Action.UNCHANGED for step in steps)
        if not steps:
            self.stderr.write("No workflow files: none of the installed apps has workflows/*.json.")
        if options["check"] and changing:
            raise CommandError(
                f"{changing} workflow{'s' if changing != 1 else ''} would change: "
                "run manage.py sync_workflows"
            )
