"""`workflow-engine <command>`: Django's manage.py for the installed package (the console
script in pyproject.toml), so migrate, runserver, replay_execution, ... run without a
checkout. `python -m config.cli` is the same."""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv if argv is None else argv)


if __name__ == "__main__":
    main()
