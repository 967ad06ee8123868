"""Admin: the triggers, and the recent events with what each started (read-only)."""

from __future__ import annotations

from django.contrib import admin

from triggers.models import Event, EventRun, Trigger


@admin.register(Trigger)
class TriggerAdmin(admin.ModelAdmin):
    list_display = ["name", "event", "workflow", "version", "filter", "enabled", "created_by"]
    list_filter = ["enabled", "event"]
    list_select_related = ["workflow", "version"]
    search_fields = ["name", "event"]


class EventRunInline(admin.TabularInline):
    model = EventRun
    fields = ["trigger_name", "execution", "error"]
    readonly_fields = ["trigger_name", "execution", "error"]
    extra = 0
    can_delete = False


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    list_display = ["id", "key", "created_at", "created_by"]
    list_filter = ["key"]
    search_fields = ["key", "idempotency_key"]
    readonly_fields = ["id", "key", "data", "idempotency_key", "created_at", "created_by"]
    inlines = [EventRunInline]
    ordering = ["-created_at"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
