"""Writes of workflows and their versions. Every definition is validated here, so no
invalid definition reaches the database whichever caller (API, admin, script) stores it."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Max

from workflows.cycles import Planned, check_no_cycle
from workflows.dsl import Definition, DefinitionError, NodeBody, Problem, parse_definition
from workflows.models import Pool, WorkflowDefinition, WorkflowVersion


def _function_registry() -> Callable[[str], bool] | None:
    try:
        from nodes.registry import function_exists
    except ImportError:  # the nodes app is optional for validation: names go unchecked
        return None
    return function_exists


def definition_parse(*, definition: object) -> Definition:
    """The parsed definition, checked for everything that needs no database (the parser,
    the registered functions); raises DefinitionError with every problem found."""
    return parse_definition(definition, function_exists=_function_registry())


def definition_validate(*, definition: object) -> Definition:
    """The parsed definition; raises DefinitionError with every problem found (a pool
    a node names must exist: POST /pools first)."""
    parsed = definition_parse(definition=definition)
    named = list(pools_named(parsed))
    known = set(
        Pool.objects.filter(name__in={p for _, _, p in named}).values_list("name", flat=True)
    )
    missing = [
        Problem(
            f"no pool named '{pool}': create it first with POST /pools "
            f'{{"name": "{pool}", "slots": N}}',
            node=node,
            field=field,
        )
        for node, field, pool in named
        if pool not in known
    ]
    if missing:
        raise DefinitionError(missing)
    return parsed


def pools_named(definition: Definition) -> Iterator[tuple[str, str, str]]:
    """(node id, field, pool) for every pool the definition names: on a node, its
    compensation or a map's per-item node."""
    for node in definition.nodes:
        bodies = [("pool", node), ("compensation.pool", node.compensation)]
        item = getattr(node.spec, "node", None)
        if isinstance(item, NodeBody):
            bodies.append(("node.pool", item))
        for field, body in bodies:
            if body is not None and body.pool:
                yield node.id, field, body.pool


def _name_taken(name: str) -> ValidationError:
    return ValidationError(
        {
            "name": [
                f"A workflow named '{name}' already exists: choose another name, or add a "
                f"version with POST /workflows/{name}/versions."
            ]
        }
    )


def workflow_create(
    *,
    name: str,
    definition: object,
    description: str = "",
    by: str = "",
    planned: Planned | None = None,
) -> WorkflowDefinition:
    """A new workflow with `definition` as its version 1. `by`: the creating username;
    `planned`: versions stored with it (a sync's), counted by the cycle check."""
    workflow = WorkflowDefinition(name=name, description=description, created_by=by)
    workflow.full_clean(validate_unique=False)
    if WorkflowDefinition.objects.filter(name=name).exists():
        raise _name_taken(name)
    definition_validate(definition=definition)
    check_no_cycle(name=name, number=1, raw=definition, planned=planned)
    try:
        with transaction.atomic():
            workflow.save()
            WorkflowVersion.objects.create(
                workflow=workflow, version=1, definition=definition, created_by=by
            )
    except IntegrityError:
        # A concurrent request took the name between the check above and the insert.
        raise _name_taken(name) from None
    return workflow


def workflow_version_create(
    *,
    workflow: WorkflowDefinition,
    definition: object,
    by: str = "",
    planned: Planned | None = None,
) -> WorkflowVersion:
    """The next numbered version of `workflow`; earlier versions are never touched.
    `planned`: versions stored with it (a sync's), counted by the cycle check."""
    definition_validate(definition=definition)
    with transaction.atomic():
        # Lock the workflow row so that concurrent creates number versions one after the
        # other (on SQLite the IMMEDIATE transaction already serializes writers); the
        # unique (workflow, version) constraint backs this up.
        locked = WorkflowDefinition.objects.select_for_update().get(pk=workflow.pk)
        last = WorkflowVersion.objects.filter(workflow=locked).aggregate(last=Max("version"))
        number = (last["last"] or 0) + 1
        # Under the lock: the check sees the versions numbered before this one.
        check_no_cycle(name=locked.name, number=number, raw=definition, planned=planned)
        return WorkflowVersion.objects.create(
            workflow=locked, version=number, definition=definition, created_by=by
        )


def version_pinned(
    *, workflow: WorkflowDefinition, number: int | None, hint: str = ""
) -> WorkflowVersion | None:
    """The version a schedule or trigger pins, None for none (it runs the latest each
    time); a number the workflow lacks raises a ValidationError on "version"."""
    if number is None:
        return None
    found = workflow.versions.filter(version=number).first()
    if found is None:
        message = f"Workflow '{workflow.name}' has no version {number}{hint}."
        raise ValidationError({"version": [message]})
    return found
