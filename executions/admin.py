"""Admin: executions with their tasks and timeline. Events can never be added, changed or
deleted here: the log is append-only, and the admin is a window onto it."""

from __future__ import annotations

import uuid

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import path
from django.utils.html import format_html, format_html_join
from django_celery_beat import admin as celery_beat_admin
from django_celery_beat.models import PeriodicTask

from executions.beat import engine_entries
from executions.console.actions import action_view
from executions.console.changelist import (
    EstimatedCountPaginator,
    HasFailedNodes,
    bulk,
    search_exact,
)
from executions.console.readonly import ReadOnlyAdminMixin
from executions.console.timeline import seconds_text
from executions.console.views import console_view
from executions.engine.events import Source
from executions.liveness import sweeper_status
from executions.models import Attempt, Event, Execution, Task, Timer
from executions.pool_views import SLOTS_HELP
from executions.retention import admin as retention_admin  # noqa: F401

# The admin pages of the app's subpackages register themselves when imported.
from executions.schedules import admin as schedules_admin  # noqa: F401
from executions.services.pools import pool_update, pools_in_use
from executions.triggers import admin as triggers_admin  # noqa: F401
from workflows.models import Pool
from workflows.rest.permissions import OPERATE


class ReadOnlyLargeTableAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """No COUNT(*) of a whole large table on every page (changelist.py)."""

    paginator = EstimatedCountPaginator
    show_full_result_count = False


_HEAVY = ("input", "output", "error", "snapshot", "request_fingerprint", "last_hash")


@admin.register(Execution)
class ExecutionAdmin(ReadOnlyLargeTableAdmin):
    """The list scales to large tables (changelist.py); the page of one execution is the
    console (executions/console/): picture, timeline, nodes, log and actions."""

    list_display = [
        "short_id",
        "workflow",
        "version_number",
        "status_badge",
        "created_by",
        "tags_text",
        "created_at",
        "took",
    ]
    list_select_related = ["workflow", "version"]
    list_filter = ["status", "workflow", HasFailedNodes, "created_at"]
    date_hierarchy = "created_at"
    search_fields = ["id"]  # the search itself is search_exact: never icontains on a UUID
    search_help_text = (
        "An execution id, a workflow name, who started it, or a tag as key:value (exact)."
    )
    actions = ["cancel_selected", "retry_selected"]

    class Media:
        css = {"all": ["executions/console.css"]}

    @admin.display(description="execution", ordering="id")
    def short_id(self, obj: Execution) -> str:
        return format_html('<span class="wf-mono" title="{}">{}…</span>', obj.pk, str(obj.pk)[:8])

    @admin.display(description="tags")
    def tags_text(self, obj: Execution) -> str:
        # One tag a line (console.css): a long value wraps inside its own line.
        tags = sorted(obj.tags.items())
        return format_html_join("", '<span class="wf-tag">{}:{}</span>', tags) if tags else "—"

    @admin.display(description="took")
    def took(self, obj: Execution) -> str:
        if obj.started_at is None or obj.ended_at is None:
            return "—"
        return seconds_text((obj.ended_at - obj.started_at).total_seconds())

    def get_queryset(self, request):
        # The list shows none of the JSON columns; the snapshot alone is O(nodes) per row.
        return super().get_queryset(request).defer(*_HEAVY, "version__definition")

    @admin.display(description="version", ordering="version__version")
    def version_number(self, obj: Execution) -> int:
        return obj.version.version

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: Execution) -> str:
        return format_html('<span class="wf-badge wf-{}">{}</span>', obj.status, obj.status)

    def get_search_results(self, request, queryset, search_term):
        return search_exact(queryset, search_term)

    def has_operate_permission(self, request) -> bool:
        return request.user.has_perm(OPERATE)

    @admin.action(description="Cancel selected executions", permissions=["operate"])
    def cancel_selected(self, request, queryset):
        return bulk(self, request, queryset, action="cancel")

    @admin.action(description="Retry selected executions", permissions=["operate"])
    def retry_selected(self, request, queryset):
        return bulk(self, request, queryset, action="retry")

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path(
                "<path:object_id>/do/<str:action>/",
                view(
                    lambda request, object_id, action: action_view(self, request, object_id, action)
                ),
                name="executions_execution_action",
            ),
            path(
                "<path:object_id>/live/",
                view(lambda request, object_id: console_view(self, request, object_id, live=True)),
                name="executions_execution_live",
            ),
            *super().get_urls(),
        ]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        warn_if_sweeper_stale(request)
        return console_view(self, request, object_id)

    def changelist_view(self, request, extra_context=None):
        warn_if_sweeper_stale(request)
        return super().changelist_view(request, extra_context)


def warn_if_sweeper_stale(request: HttpRequest) -> None:
    """Without sweeps, nothing the page shows as waiting on time (a lease, a timer, a
    retry, a held execution) moves: say so where an operator looks first."""
    status = sweeper_status()
    if status.state in ("ok", "unknown"):
        return
    # The state read as a sentence ("The sweeper is never" was what a person saw).
    what = (
        f"The sweeper is stale: its last completed sweep was "
        f"{seconds_text(status.age_seconds or 0)} ago"
        if status.last_sweep_at
        else "The sweeper has never run: no sweep has completed yet"
    )
    messages.warning(
        request,
        f"{what}. Until it runs, no lease times out and no "
        "timer, retry or held execution moves on. Check that celery beat runs and that a "
        "worker consumes the orchestrator queue.",
    )


class EventSourceFilter(admin.SimpleListFilter):
    """The sources as the engine names them: no SELECT DISTINCT over the whole log."""

    title = "source"
    parameter_name = "source"

    def lookups(self, request, model_admin):
        return [(source.value, source.value) for source in Source]

    def queryset(self, request, queryset):
        return queryset.filter(source=self.value()) if self.value() else queryset


@admin.register(Event)
class EventAdmin(ReadOnlyLargeTableAdmin):
    # The largest table: no join to the execution's row (its snapshot), no data column in
    # the list, newest first within an execution by index.
    list_display = ["execution_id", "seq", "type", "node_id", "attempt", "source", "timestamp"]
    list_filter = ["type", EventSourceFilter]
    ordering = ["-execution_id", "-seq"]
    search_fields = ["execution__id"]
    readonly_fields = [
        "execution",
        "seq",
        "type",
        "node_id",
        "attempt",
        "data",
        "source",
        "timestamp",
    ]

    def get_queryset(self, request):
        return super().get_queryset(request).defer("data", "hash")

    def get_search_results(self, request, queryset, search_term):
        # An execution's id, exactly (never icontains on a UUID column).
        try:
            return queryset.filter(execution_id=uuid.UUID(search_term.strip())), False
        except ValueError:
            return (queryset.none() if search_term.strip() else queryset), False

    def get_actions(self, request):
        return {}  # no bulk delete


@admin.register(Task)
class TaskAdmin(ReadOnlyLargeTableAdmin):
    list_display = ["execution_id", "node_id", "type", "status", "attempts", "ended_at"]
    list_filter = ["status", "type"]


@admin.register(Attempt)
class AttemptAdmin(ReadOnlyLargeTableAdmin):
    list_display = ["execution_id", "node_id", "attempt", "status", "worker_id", "lease_expires_at"]
    list_filter = ["status"]


@admin.register(Timer)
class TimerAdmin(ReadOnlyLargeTableAdmin):
    list_display = ["execution_id", "node_id", "attempt", "kind", "due_at", "fired_at"]
    list_filter = ["kind"]


@admin.register(Pool)
class PoolAdmin(admin.ModelAdmin):
    """Pools with the slots in use now (running attempts naming them) and those free.

    Here, not in workflows/admin.py: a change goes through the pools service, as PATCH
    /pools/{name} does, so more slots release the attempts waiting for them at once."""

    list_display = ["name", "slots", "used", "free", "waiting", "description", "created_by"]
    search_fields = ["name", "description"]
    fields = ["name", "slots", "description", "created_at", "created_by"]
    readonly_fields = ["created_at", "created_by"]

    def get_queryset(self, request):
        return pools_in_use()

    def has_delete_permission(self, request, obj=None) -> bool:
        # Definitions name pools: one removed would fail every execution that reaches them.
        return False

    def get_readonly_fields(self, request, obj=None):
        # The name is what definitions refer to: fixed once created.
        return [*self.readonly_fields, "name"] if obj is not None else self.readonly_fields

    def get_form(self, request, obj=None, change=False, **kwargs):
        help = f"{SLOTS_HELP} More release waiting attempts at once; fewer, as running ones end."
        return super().get_form(request, obj, change, help_texts={"slots": help}, **kwargs)

    def save_model(self, request, obj, form, change) -> None:
        if not change:
            obj.created_by = request.user.get_username()
            obj.save()
            return
        pool_update(pool=obj, slots=obj.slots, description=obj.description)

    @admin.display(ordering="running", description="used")
    def used(self, obj: Pool) -> int:
        return getattr(obj, "running", 0)

    @admin.display(description="free")
    def free(self, obj: Pool) -> int:
        return max(obj.slots - getattr(obj, "running", 0), 0)

    @admin.display(ordering="waiting", description="waiting")
    def waiting(self, obj: Pool) -> int:
        return getattr(obj, "waiting", 0)


class PeriodicTaskAdmin(celery_beat_admin.PeriodicTaskAdmin):
    """django-celery-beat's periodic tasks without the engine's own entries (the sweeper):
    beat writes those back from the engine's definition whenever it reads the table
    (executions/beat.py), so an edit here could only mislead. /healthz shows the sweeper."""

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).exclude(name__in=list(engine_entries()))


if admin.site.is_registered(PeriodicTask):
    admin.site.unregister(PeriodicTask)
admin.site.register(PeriodicTask, PeriodicTaskAdmin)
