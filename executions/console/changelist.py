"""The execution list at scale: filters, an exact-id search, a count that does not scan
the whole table, and the bulk actions (cancel, retry) with a confirmation page."""

from __future__ import annotations

import uuid
from functools import cached_property
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.paginator import Paginator
from django.db import connection
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from executions.models import Execution
from executions.selectors import with_failed_nodes
from executions.services.bulk import bulk_apply
from executions.tags import TagError, parse_filter, with_tags
from workflows.conf import engine_settings

#: Above this many rows, an unfiltered list shows PostgreSQL's row estimate as its count.
ESTIMATE_FROM = 50_000


class HasFailedNodes(admin.SimpleListFilter):
    title = "failed nodes"
    parameter_name = "failed_nodes"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Has failed nodes"), ("no", "No failed node")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() in ("yes", "no"):
            return with_failed_nodes(queryset, self.value() == "yes")
        return queryset


class EstimatedCountPaginator(Paginator):
    """COUNT(*) of a large table is a full scan on PostgreSQL; an unfiltered list takes
    the planner's estimate (pg_class.reltuples) instead, once the table is large. A
    filtered list is counted exactly: its filters use indexes."""

    @cached_property
    def count(self) -> int:
        queryset = self.object_list
        if (
            isinstance(queryset, QuerySet)
            and connection.vendor == "postgresql"
            and not queryset.query.where
        ):
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass",
                    [queryset.model._meta.db_table],
                )
                row = cursor.fetchone()
            if row and row[0] >= ESTIMATE_FROM:
                return int(row[0])
        return super().count


def search_exact(queryset: QuerySet, term: str) -> tuple[QuerySet, bool]:
    """An execution id (whole UUID) finds that execution; anything else is a workflow's
    name or who started it, matched exactly. Never icontains on a UUID column: that casts
    every row to text."""
    term = term.strip()
    if not term:
        return queryset, False
    try:
        return queryset.filter(pk=uuid.UUID(term)), False
    except ValueError:
        pass
    by_name = queryset.filter(workflow__name=term)
    found = by_name | queryset.filter(created_by=term)
    try:
        # key:value: the executions with that tag (as ?tag= in the API).
        return found | with_tags(queryset, [parse_filter(term)]), False
    except TagError:
        return found, False


def bulk(
    model_admin: Any, request: HttpRequest, queryset: QuerySet, *, action: str
) -> HttpResponse | None:
    """Confirm, then apply cancel or retry to the selected executions through the same
    service as POST /executions/bulk/<action>: each in its own transaction, and what the
    service refuses (already ended, nothing to retry) is reported as skipped."""
    most = engine_settings.BULK_MAX_EXECUTIONS
    ids = [str(pk) for pk in queryset.order_by().values_list("pk", flat=True)[: most + 1]]
    if len(ids) > most:
        model_admin.message_user(
            request,
            f"Select at most {most:,} executions at once (WORKFLOW_BULK_MAX_EXECUTIONS).",
            messages.ERROR,
        )
        return None
    if request.POST.get("confirm") != "yes":
        context = {
            **model_admin.admin_site.each_context(request),
            "opts": model_admin.model._meta,
            "title": f"{action.capitalize()} {len(ids)} executions?",
            "action": action,
            "ids": ids,
            "shown": Execution.objects.filter(pk__in=ids[:20]).select_related("workflow"),
            "checkbox": ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/executions/execution/confirm_bulk.html", context)
    result = bulk_apply(action, ids=ids, by=request.user.get_username())
    skipped = result["skipped"]
    level = messages.SUCCESS if result["accepted"] else messages.WARNING
    text = f"{action.capitalize()}: {result['accepted']} accepted, {len(skipped)} skipped"
    if skipped:
        text += " (" + "; ".join(f"{s['id']}: {s['reason']}" for s in skipped[:5])
        text += ", …)" if len(skipped) > 5 else ")"
    model_admin.message_user(request, text, level)
    return None
