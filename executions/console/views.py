"""The execution page (the admin's change view of an execution) and its live fragment."""

from __future__ import annotations

import uuid
from http import HTTPStatus
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse

from executions.console.actions import available, parked_nodes, waiting_approvals
from executions.console.page import ATTEMPTS_SHOWN, execution_or_404, execution_page, shown
from executions.console.timeline import seconds_text
from executions.engine.statuses import EXECUTION_TERMINAL, TaskStatus
from executions.models import Execution
from executions.retention.tombstones import tombstone_of
from executions.services import control
from workflows import clock
from workflows.rest.permissions import APPROVE, OPERATE


def console_view(
    model_admin: Any, request: HttpRequest, object_id: str, *, live: bool = False
) -> HttpResponse:
    try:
        execution = execution_or_404(
            object_id,
            # The page shows the parent's and the original's ids only: no join to their rows.
            Execution.objects.select_related("workflow", "version").defer("snapshot"),
        )
    except Http404:
        return purged_view(model_admin, request, object_id)
    if not model_admin.has_view_permission(request, execution):
        raise PermissionDenied
    before = request.GET.get("before", "")
    page = execution_page(
        execution,
        # A malformed ?before= shows the newest page (it is a link, not an API).
        before=int(before) if before.isascii() and before.isdigit() else None,
        log=not live,
    )
    user = request.user
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": f"Execution {execution.pk}",
        "subtitle": None,
        "execution": execution,
        "page": page,
        "actions": available(execution, user),
        "may_operate": user.has_perm(OPERATE),
        "may_approve": user.has_perm(APPROVE),
        "waiting_approvals": set(waiting_approvals(execution)),
        "parked": set(parked_nodes(execution)),
        "retryable": set(control.RETRYABLE_NODE),
        "terminal": execution.status in EXECUTION_TERMINAL,
        "events_url": reverse("workflows:event-list", args=[execution.pk]),
        "live_url": reverse("admin:executions_execution_live", args=[execution.pk]),
        "action_url": reverse("admin:executions_execution_action", args=[execution.pk, "ACTION"]),
        "page_io": {
            "input": shown(execution.input),
            "output": shown(execution.output),
            "error": shown(execution.error) if execution.error else "",
        },
        "legend": [s.value for s in TaskStatus],
        "duration": duration(execution),
        "attempts_shown": ATTEMPTS_SHOWN,
        "replays": execution.replays.order_by("-created_at").values_list("id", flat=True)[:5],
    }
    template = (
        "admin/executions/execution/_live.html"
        if live
        else "admin/executions/execution/console.html"
    )
    return TemplateResponse(request, template, context)


def purged_view(model_admin: Any, request: HttpRequest, object_id: str) -> HttpResponse:
    """A link to a purged execution answers 410 with what its tombstone keeps, as the API
    does: the id was real, and "not found" would hide that its log was deleted on purpose."""
    try:
        tombstone = tombstone_of(uuid.UUID(object_id))
    except ValueError:
        tombstone = None
    if tombstone is None or not model_admin.has_view_permission(request):
        raise Http404(f"no execution {object_id!r}")
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": f"Execution {tombstone.pk} (purged)",
        "subtitle": None,
        "tombstone": tombstone,
        "tombstone_url": reverse("admin:executions_tombstone_change", args=[tombstone.pk])
        if request.user.has_perm("executions.view_tombstone")
        else "",
    }
    return TemplateResponse(
        request, "admin/executions/execution/purged.html", context, status=HTTPStatus.GONE
    )


def duration(execution: Execution) -> str:
    """How long it ran (so far, while it runs)."""
    if execution.started_at is None:
        return ""
    end = execution.ended_at or clock.now()
    return seconds_text(max((end - execution.started_at).total_seconds(), 0.0))
