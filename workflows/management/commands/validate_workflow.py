"""manage.py validate_workflow FILE...

Checks definition files offline, with no database: each is JSON, its name (the file's
name without .json) is a workflow name and its definition passes the parser and names
registered functions, with the messages of a 400 of POST /workflows. What only the
database can tell (that pools exist, that workflows do not call each other in a cycle)
is left to sync_workflows.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from workflows.files import FileProblems, WorkflowFile, load, shown


class Command(BaseCommand):
    help = "Validate workflow definition files offline; exit 1 naming each problem."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", metavar="FILE", help="definition files (.json)")

    def handle(self, *args, **options) -> None:
        problems: list[str] = []
        for name in options["files"]:
            path = Path(name)
            try:
                load(WorkflowFile(name=path.stem, path=path))
            except FileProblems as exc:
                problems.extend(exc.lines)
            else:
                self.stdout.write(f"{shown(path)}: valid")
        if problems:
            raise CommandError("\n".join(problems))
