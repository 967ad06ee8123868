"""Admin: executions with their tasks and timeline. Events can never be added, changed or
deleted here: the log is append-only, and the admin is a window onto it."""

from __future__ import annotations

from django.contrib import admin

from executions.models import Attempt, Event, Execution, Task, Timer


class ReadOnlyAdminMixin:
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


# One tuple for fields and readonly_fields both (the stubs type `fields` as field groups,
# which readonly_fields may not hold).
_TASK_FIELDS = ("node_id", "type", "status", "attempts", "retry_count", "started_at", "ended_at")
_EVENT_FIELDS = ("seq", "type", "node_id", "attempt", "source", "timestamp", "data")


class TaskInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = Task
    extra = 0
    fields = _TASK_FIELDS
    readonly_fields = _TASK_FIELDS


class EventInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = Event
    extra = 0
    fields = _EVENT_FIELDS
    readonly_fields = _EVENT_FIELDS
    ordering = ["seq"]


@admin.register(Execution)
class ExecutionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["id", "workflow", "version", "status", "created_by", "created_at", "ended_at"]
    list_filter = ["status", "workflow"]
    search_fields = ["id", "workflow__name", "idempotency_key", "created_by"]
    readonly_fields = [
        "id",
        "workflow",
        "version",
        "status",
        "input",
        "output",
        "error",
        "created_at",
        "started_at",
        "ended_at",
        "replay_of",
        "parent_execution",
        "created_by",
        "idempotency_key",
        "last_seq",
        "decided_seq",
    ]
    exclude = ["snapshot", "request_fingerprint", "snapshot_seq"]
    inlines = [TaskInline, EventInline]


@admin.register(Event)
class EventAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["execution", "seq", "type", "node_id", "attempt", "source", "timestamp"]
    list_filter = ["type", "source"]
    search_fields = ["execution__id", "node_id"]
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

    def get_actions(self, request):
        return {}  # no bulk delete


@admin.register(Task)
class TaskAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["execution", "node_id", "type", "status", "attempts", "ended_at"]
    list_filter = ["status", "type"]


@admin.register(Attempt)
class AttemptAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["execution", "node_id", "attempt", "status", "worker_id", "lease_expires_at"]
    list_filter = ["status"]


@admin.register(Timer)
class TimerAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["execution", "node_id", "attempt", "kind", "due_at", "fired_at"]
    list_filter = ["kind"]
