"""docs/reference/commands.md: every management command of the engine's apps, from the
parser that `--help` prints (its help text, arguments and defaults), laid out as a table
so the page does not depend on the Python version's argparse layout."""

from __future__ import annotations

import argparse

from django.core.management import get_commands, load_command_class
from django.core.management.base import BaseCommand

from scripts.docs_reference.markdown import GENERATED, Undocumented, code, first_paragraph, table

APPS = ("workflows", "executions", "nodes")
#: The options every Django command has: listed once on the page, not per command.
COMMON = (
    "--help",
    "--version",
    "--verbosity",
    "--settings",
    "--pythonpath",
    "--traceback",
    "--no-color",
    "--force-color",
    "--skip-checks",
)


def commands() -> list[tuple[str, str]]:
    """(name, app) of the apps' commands, by name."""
    return sorted((name, app) for name, app in get_commands().items() if app in APPS)


def _own(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [
        action
        for action in parser._actions
        if not set(action.option_strings) & set(COMMON) and action.help != argparse.SUPPRESS
    ]


def _usage(name: str, actions: list[argparse.Action]) -> str:
    parts = [f"python manage.py {name}"]
    for action in actions:
        if not action.option_strings:
            shown = action.metavar or action.dest
            parts.append(f"{shown} ..." if action.nargs in ("*", "+") else str(shown))
            continue
        flag = action.option_strings[-1]
        if action.nargs == 0:
            parts.append(f"[{flag}]")
        else:
            parts.append(f"[{flag} {action.metavar or action.dest.upper()}]")
    return " ".join(parts)


def _argument(command: str, action: argparse.Action) -> tuple[str, str, str]:
    names = ", ".join(action.option_strings) or str(action.metavar or action.dest)
    text = " ".join(str(action.help or "").split()).replace("%(default)s", str(action.default))
    if not text:
        raise Undocumented(f"{command}'s argument {names} has no help text")
    if action.choices:
        text += " (one of " + ", ".join(code(choice) for choice in action.choices) + ")"
    shown = action.default
    has_default = action.option_strings and action.nargs != 0 and shown not in (None, "", [])
    return code(names), code(shown) if has_default else "", text


def _section(name: str, command: BaseCommand) -> str:
    parser = command.create_parser("manage.py", name)
    actions = _own(parser)
    out = [f"\n## {name}\n\n", " ".join(str(command.help).split()), "\n\n"]
    out.append(f"```text\n{_usage(name, actions)}\n```\n\n")
    if actions:
        rows = [_argument(name, action) for action in actions]
        out.append(table(("Argument", "Default", "Meaning"), rows))
    return "".join(out)


def render() -> str:
    out = [
        GENERATED,
        "# Management commands\n\n",
        "Run each as `python manage.py <command>` (in the Docker image: `docker compose "
        "run --rm web python manage.py <command>`); `--help` prints the same. Every "
        "command also takes Django's own options: "
        + ", ".join(code(option) for option in COMMON)
        + ".\n\n",
    ]
    found = [(name, load_command_class(app, name)) for name, app in commands()]
    for name, command in found:
        if not str(command.help).strip():
            raise Undocumented(f"the management command {name} has no `help` text")
        out.append(f"- [`{name}`](#{name}): {first_paragraph(command.help)}\n")
    out += [_section(name, command) for name, command in found]
    return "".join(out)
