"""manage.py workflow_schema [--output FILE]: the definition's JSON Schema, for editors.

Point an editor at it for `*/workflows/*.json` (in VS Code, the `json.schemas` setting);
it lists the functions registered where it is generated, so make it again when they
change."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandParser

from workflows.editor_schema import editor_schema


class Command(BaseCommand):
    help = "Print the JSON Schema of a workflow definition (for editors)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", default=None, help="write it to this file instead")

    def handle(self, *args, **options) -> None:
        text = json.dumps(editor_schema(), indent=2) + "\n"
        if options["output"]:
            Path(options["output"]).write_text(text)
            self.stdout.write(f"wrote {options['output']}")
        else:
            self.stdout.write(text, ending="")
