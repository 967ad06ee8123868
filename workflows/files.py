"""Definitions kept in the repository: `<app>/workflows/<name>.json` in every installed
app holds the definition of the workflow `<name>`.

Reading a file checks what needs no database: that it is JSON the database can store,
that its name is a workflow name and that the definition parses (the parser and the
registered functions, with the messages a 400 of POST /workflows gives). What needs the
database (pools, cycles through other workflows) is the sync's to check.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.apps import apps
from django.core.exceptions import ValidationError

from workflows.dsl import Definition, DefinitionError
from workflows.models import WorkflowDefinition
from workflows.services import definition_parse
from workflows.storable import unstorable_message, unstorable_path

#: The folder of an app that holds its workflows' definitions.
FOLDER = "workflows"


@dataclass(frozen=True)
class WorkflowFile:
    name: str
    path: Path


@dataclass(frozen=True)
class Loaded:
    """A file that reads and parses: its JSON as written and its parsed definition."""

    file: WorkflowFile
    raw: Any
    definition: Definition


class FileProblems(Exception):
    """Every problem found in the files read, one line each, each naming its file."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        super().__init__("\n".join(lines))


def shown(path: Path) -> str:
    """The path as its reader knows it: relative to the current directory when under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def discovered() -> list[WorkflowFile]:
    """Every definition file of every installed app, by workflow name. Hidden files (an
    editor's backups, say) are not definitions."""
    found = [
        WorkflowFile(name=path.stem, path=path)
        for config in apps.get_app_configs()
        for path in sorted((Path(config.path) / FOLDER).glob("*.json"))
        if not path.name.startswith(".") and path.is_file()
    ]
    return sorted(found, key=lambda file: (file.name, str(file.path)))


def load_all(files: Iterable[WorkflowFile]) -> list[Loaded]:
    """Each file read and parsed; FileProblems listing every problem of every file (and
    every name two files claim) if any."""
    loaded, problems = [], []
    claimed: dict[str, WorkflowFile] = {}
    for file in files:
        first = claimed.setdefault(file.name, file)
        if first is not file:
            problems.append(
                f"{shown(file.path)}: the workflow '{file.name}' is already defined by "
                f"{shown(first.path)}; a workflow name may be defined by one file only"
            )
            continue
        try:
            loaded.append(load(file))
        except FileProblems as exc:
            problems.extend(exc.lines)
    if problems:
        raise FileProblems(problems)
    return loaded


def load(file: WorkflowFile) -> Loaded:
    """The file read and parsed, or FileProblems naming it and every problem in it."""
    problems = _name_problems(file.name)
    definition = raw = None
    try:
        raw = _read(file.path)
        definition = definition_parse(definition=raw)
    except _Unreadable as exc:
        problems.append(str(exc))
    except DefinitionError as exc:
        problems.extend(str(problem) for problem in exc.problems)
    if problems or definition is None:
        raise FileProblems([f"{shown(file.path)}: {problem}" for problem in problems])
    return Loaded(file=file, raw=raw, definition=definition)


def _name_problems(name: str) -> list[str]:
    try:
        # The model field's own checks (its validators and its length), with no database:
        # a name refused here would otherwise pass --check and fail the sync's insert.
        WorkflowDefinition._meta.get_field("name").clean(name, None)
    except ValidationError as exc:
        return [
            f"name: {message} The workflow's name is the file's name without .json, here '{name}'."
            for message in exc.messages
        ]
    return []


class _Unreadable(Exception):
    pass


def _read(path: Path) -> Any:
    try:
        # utf-8-sig: a byte order mark, as some editors write, is no problem.
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise _Unreadable(f"cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise _Unreadable(f"not UTF-8 text: {exc}") from None
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise _Unreadable(f"JSON parse error - {exc}") from None
    except RecursionError:
        raise _Unreadable("JSON parse error - nested too deeply.") from None
    # Checked here, not at the insert: PostgreSQL would refuse it with an error naming no
    # file, after --check and validate_workflow had passed it.
    where = unstorable_path(raw)
    if where is not None:
        raise _Unreadable(unstorable_message(where))
    return raw
