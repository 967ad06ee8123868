"""Admin: browse schedules, pause/resume and delete them. Every write goes through
schedules.services so that the beat's PeriodicTask stays in step; creating needs the
validation of POST /schedules, so it is done through the API."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from schedules.models import Schedule
from schedules.services import schedule_delete, schedule_set_enabled

# The stubs type `fields` as field groups, which readonly_fields may not hold.
_FIELDS = (
    "workflow",
    "version",
    "cron",
    "timezone",
    "input",
    "enabled",
    "created_at",
    "created_by",
    "updated_at",
    "updated_by",
)


@admin.register(Schedule)
class ScheduleAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "workflow",
        "version",
        "cron",
        "timezone",
        "enabled",
        "next_run_at",
        "created_by",
        "updated_by",
    ]
    list_filter = ["enabled", "workflow"]
    list_select_related = ["workflow", "version"]
    search_fields = ["workflow__name", "cron"]
    fields = _FIELDS
    readonly_fields = [f for f in _FIELDS if f != "enabled"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: Schedule, form, change: bool) -> None:
        schedule_set_enabled(schedule=obj, enabled=obj.enabled, by=request.user.get_username())

    def delete_model(self, request: HttpRequest, obj: Schedule) -> None:
        schedule_delete(schedule=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        for schedule in queryset:
            schedule_delete(schedule=schedule)
