"""The demo's workflow, from its file (workflows/user-signup.json in this app): stored as
a deploy stores a repository's workflows, by `manage.py sync_workflows`."""

from __future__ import annotations

from collections.abc import Callable
from io import StringIO
from typing import Any

from django.core.management import CommandError, call_command

from config.demo.client import WORKFLOW_NAME, DemoError
from workflows.models import WorkflowVersion


def sync_demo_workflow(out: Callable[[str], None]) -> tuple[int, Any]:
    """The version number and definition of the demo workflow, created or versioned from
    its file if need be."""
    printed = StringIO()
    try:
        call_command("sync_workflows", stdout=printed)
    except CommandError as exc:
        raise DemoError(f"sync_workflows: {exc}") from exc
    for line in printed.getvalue().splitlines():
        out(f"sync_workflows: {line}")
    latest = (
        WorkflowVersion.objects.filter(workflow__name=WORKFLOW_NAME).order_by("-version").first()
    )
    if latest is None:
        raise DemoError(f"no workflows/{WORKFLOW_NAME}.json in an installed app defines the demo")
    return latest.version, latest.definition
