"""The workflow a test runs: a name (the database's workflow of that name, else the
definition file of that name in an installed app) or a definition given as a dict."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from workflows.cycles import references
from workflows.definition_diff import canonical
from workflows.files import FileProblems, discovered, load
from workflows.models import WorkflowDefinition
from workflows.services import workflow_create

#: What a workflow stored by the harness records as its creator.
BY = "workflows.testing"
#: How a definition given as a dict is named: by its content, so the same one is reused.
PREFIX = "test-"


class NoSuchWorkflow(LookupError):
    """Neither the database nor any installed app's definition files hold the name."""


def workflow_for(workflow: str | Mapping[str, Any]) -> str:
    """The name of the stored workflow to run, storing it first where it is not."""
    if isinstance(workflow, Mapping):
        digest = hashlib.sha256(canonical(workflow).encode()).hexdigest()[:16]
        name = PREFIX + digest
        if not WorkflowDefinition.objects.filter(name=name).exists():
            _store_called(workflow, [name])
            workflow_create(name=name, definition=dict(workflow), by=BY)
        return name
    if not isinstance(workflow, str):
        raise TypeError(f"workflow must be a name or a definition (a dict), not {workflow!r}")
    _stored(workflow, [])
    return workflow


def _stored(name: str, path: list[str]) -> None:
    """The workflow `name` in the database, from its file if it was not; so are the
    workflows its file calls (a sub-workflow's file is read as the test needs it)."""
    if WorkflowDefinition.objects.filter(name=name).exists():
        return
    files = [file for file in discovered() if file.name == name]
    if not files:
        raise NoSuchWorkflow(
            f"no workflow named {name!r}: none in the database, and no installed app has "
            f"workflows/{name}.json"
        )
    if len(files) > 1:
        raise FileProblems([f"the workflow {name!r} is defined by more than one file"])
    loaded = load(files[0])
    _store_called(loaded.raw, [*path, name])
    workflow_create(name=name, definition=loaded.raw, by=BY)


def _store_called(raw: Any, path: list[str]) -> None:
    for reference in references(raw):
        # A workflow calling itself is the cycle check's to refuse, when it is stored.
        if reference.workflow not in path:
            _stored(reference.workflow, path)
