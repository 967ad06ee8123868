"""Reads of workflows and their versions, for the API and admin."""

from __future__ import annotations

from django.db.models import JSONField, OuterRef, QuerySet, Subquery

from workflows.models import WorkflowDefinition, WorkflowVersion

#: Ids are 64-bit; a longer number can only be a name, and must not reach the database
#: as an integer (it would overflow the column type and fail the query).
MAX_ID = 2**63 - 1


def workflow_list() -> QuerySet[WorkflowDefinition]:
    """Workflows with `latest_version` and `latest_definition` annotated, by name."""
    latest = WorkflowVersion.objects.filter(workflow=OuterRef("pk")).order_by("-version")
    return WorkflowDefinition.objects.annotate(
        latest_version=Subquery(latest.values("version")[:1]),
        latest_definition=Subquery(latest.values("definition")[:1], output_field=JSONField()),
    ).order_by("name", "id")


def workflow_get(*, ref: str) -> WorkflowDefinition | None:
    """A workflow (annotated as in workflow_list) by numeric id or, failing that, by name."""
    workflows = workflow_list()
    # The length check first: int() of thousands of digits raises (a 500), and more than
    # 19 digits cannot be an id anyway.
    if ref.isascii() and ref.isdigit() and len(ref) <= 19 and 0 < int(ref) <= MAX_ID:
        found = workflows.filter(pk=int(ref)).first()
        if found is not None:
            return found
    return workflows.filter(name=ref).first()


def version_resolve(
    *, workflow: WorkflowDefinition | None = None, name: str | None = None, number: int | None
) -> WorkflowVersion | None:
    """The version `number` of a workflow (given as a row or by name), or its latest when
    `number` is None: the one place "pinned or latest" is decided. None: no such version."""
    versions = WorkflowVersion.objects.select_related("workflow")
    versions = versions.filter(workflow=workflow) if workflow is not None else versions
    versions = versions.filter(workflow__name=name) if name is not None else versions
    if number is not None:
        return versions.filter(version=number).first()
    return versions.order_by("-version").first()


def workflow_version_list(*, workflow: WorkflowDefinition) -> QuerySet[WorkflowVersion]:
    """A workflow's versions, oldest first."""
    return WorkflowVersion.objects.filter(workflow=workflow).order_by("version")
