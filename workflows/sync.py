"""Syncing the definition files (workflows/files.py) with the database: a plan, then its
writes.

The plan reads only: every file is read and validated as POST /workflows validates a
definition (pools and cycles through other workflows included, the other files' new
versions counted as stored) and compared with its workflow's latest version as canonical
JSON; the caller's `replay` sums up what each new version would have done to the latest
executions of the version it replaces (sync_workflows passes the what-if replay), all
before anything is stored. The writes go through the workflow services in one
transaction: all of a run's workflows and versions are stored, or none.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import OuterRef, Subquery

from workflows.cycles import Planned, check_no_cycle
from workflows.definition_diff import Changes, canonical, definition_changes
from workflows.dsl import Definition, DefinitionError
from workflows.files import FileProblems, Loaded, WorkflowFile, discovered, load_all, shown
from workflows.models import WorkflowDefinition, WorkflowVersion
from workflows.services import definition_validate, workflow_create, workflow_version_create

#: What a synced workflow or version records as its creator: no user made it.
SYNC_BY = "sync_workflows"

#: Sums up, in words, what a candidate definition would have done to the recorded
#: executions of the version it is to replace.
Replay = Callable[[WorkflowVersion, Definition], str]


class Action(StrEnum):
    CREATED = "created"
    UNCHANGED = "unchanged"
    NEW_VERSION = "new version"


@dataclass(frozen=True)
class Step:
    """What a sync does with one file."""

    loaded: Loaded
    action: Action
    #: The workflow's latest version as stored, None for a workflow still to create.
    latest: WorkflowVersion | None = None
    changes: Changes | None = None
    #: What the replay said of the new version.
    what_if: str | None = None

    @property
    def name(self) -> str:
        return self.loaded.file.name

    @property
    def number(self) -> int:
        """The version the workflow's latest is after the sync."""
        if self.latest is None:
            return 1
        return self.latest.version + (self.action == Action.NEW_VERSION)

    def line(self) -> str:
        if self.action != Action.NEW_VERSION:
            return f"{self.name}: {self.action}"
        line = f"{self.name}: new version {self.number}: {self.changes}"
        return f"{line}; {self.what_if}" if self.what_if else line


def sync_plan(
    *, files: Iterable[WorkflowFile] | None = None, replay: Replay | None = None
) -> list[Step]:
    """What a sync of `files` (every discovered file by default) would do, reading only;
    FileProblems naming each file and problem if any file does not read or validate."""
    loaded = load_all(discovered() if files is None else files)
    latest = _latest_versions([item.file.name for item in loaded])
    steps = [_compare(item, latest.get(item.file.name)) for item in loaded]
    planned = _planned(steps)
    problems: list[str] = []
    for step in steps:
        if step.action == Action.UNCHANGED:
            continue
        try:
            definition_validate(definition=step.loaded.raw)
            check_no_cycle(name=step.name, number=step.number, raw=step.loaded.raw, planned=planned)
        except DefinitionError as exc:
            problems.extend(f"{shown(step.loaded.file.path)}: {p}" for p in exc.problems)
    if problems:
        raise FileProblems(problems)
    return [_replayed(step, replay) for step in steps]


def sync_apply(steps: Iterable[Step], *, by: str = SYNC_BY) -> None:
    """Store the plan's workflows and versions, all or none. A workflow another process
    created, or gave a version, since the plan was made fails the whole run (run again)."""
    steps = list(steps)
    # The cycle checks count every version of the run, as the plan's did: a cycle that
    # one write would close for a moment is gone once the run's next write is in.
    planned = _planned(steps)
    with transaction.atomic():
        for step in steps:
            try:
                _apply(step, by, planned)
            except (DefinitionError, ValidationError) as exc:
                where = shown(step.loaded.file.path)
                raise FileProblems([f"{where}: {message}" for message in _messages(exc)]) from exc


def _planned(steps: Iterable[Step]) -> Planned:
    """The versions a run stores, by workflow name: what its cycle checks count as stored."""
    return {
        step.name: (step.number, step.loaded.raw)
        for step in steps
        if step.action != Action.UNCHANGED
    }


def _apply(step: Step, by: str, planned: Planned) -> None:
    if step.action == Action.CREATED:
        workflow_create(name=step.name, definition=step.loaded.raw, by=by, planned=planned)
    elif step.action == Action.NEW_VERSION and step.latest is not None:
        # Locked until the run commits: no other version slips in after the latest the
        # plan compared and replayed against.
        workflow = WorkflowDefinition.objects.select_for_update().get(pk=step.latest.workflow_id)
        now = workflow.versions.order_by("-version").values_list("version", flat=True).first()
        if now != step.latest.version:
            raise ValidationError(
                f"version {now} of '{step.name}' was stored while this sync ran (it compared "
                f"with version {step.latest.version}): run it again"
            )
        workflow_version_create(
            workflow=workflow, definition=step.loaded.raw, by=by, planned=planned
        )


def _messages(exc: DefinitionError | ValidationError) -> list[str]:
    if isinstance(exc, DefinitionError):
        return [str(problem) for problem in exc.problems]
    return exc.messages


def _latest_versions(names: list[str]) -> dict[str, WorkflowVersion]:
    newest = (
        WorkflowVersion.objects.filter(workflow=OuterRef("workflow"))
        .order_by("-version")
        .values("version")[:1]
    )
    rows = WorkflowVersion.objects.filter(workflow__name__in=names, version=Subquery(newest))
    return {version.workflow.name: version for version in rows.select_related("workflow")}


def _compare(loaded: Loaded, latest: WorkflowVersion | None) -> Step:
    if latest is None:
        return Step(loaded, Action.CREATED)
    if canonical(latest.definition) == canonical(loaded.raw):
        return Step(loaded, Action.UNCHANGED, latest)
    changes = definition_changes(latest.definition, loaded.raw)
    return Step(loaded, Action.NEW_VERSION, latest, changes)


def _replayed(step: Step, replay: Replay | None) -> Step:
    if replay is None or step.action != Action.NEW_VERSION or step.latest is None:
        return step
    said = replay(step.latest, step.loaded.definition)
    return Step(step.loaded, step.action, step.latest, step.changes, said)
