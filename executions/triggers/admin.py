"""Admin: the triggers (enable, disable, change their filter and input, validated as
PATCH /triggers/{name} validates), and the recent events with what each started
(read-only). Creating a trigger is done through the API."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from executions.triggers.models import PublishedEvent, Trigger, TriggerRun
from executions.triggers.serializers import TriggerUpdateSerializer
from executions.triggers.services import trigger_check, trigger_update
from workflows.rest.admin_forms import ApiValidatedForm

_EDITABLE = ("enabled", "filter", "input")


class TriggerForm(ApiValidatedForm):
    serializer = TriggerUpdateSerializer

    class Meta:
        model = Trigger
        fields = list(_EDITABLE)

    def check(self, changes: dict[str, Any]) -> None:
        trigger_check(trigger=self.instance, changes=changes)


@admin.register(Trigger)
class TriggerAdmin(admin.ModelAdmin):
    form = TriggerForm
    list_display = ["name", "event", "workflow", "version", "filter", "enabled", "created_by"]
    list_filter = ["enabled", "event"]
    list_select_related = ["workflow", "version"]
    search_fields = ["name", "event"]
    fields = ["name", "event", "workflow", "version", *_EDITABLE, "created_at", "created_by"]
    readonly_fields = ["name", "event", "workflow", "version", "created_at", "created_by"]
    actions = ["enable_selected", "disable_selected"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def save_model(
        self, request: HttpRequest, obj: Trigger, form: TriggerForm, change: bool
    ) -> None:
        if form.changes:
            trigger_update(trigger=obj, changes=form.changes)

    @admin.action(description="Enable selected triggers", permissions=["change"])
    def enable_selected(self, request: HttpRequest, queryset: QuerySet[Trigger]) -> None:
        self._set_enabled(request, queryset, enabled=True)

    @admin.action(description="Disable selected triggers", permissions=["change"])
    def disable_selected(self, request: HttpRequest, queryset: QuerySet[Trigger]) -> None:
        self._set_enabled(request, queryset, enabled=False)

    def _set_enabled(
        self, request: HttpRequest, queryset: QuerySet[Trigger], *, enabled: bool
    ) -> None:
        chosen = list(queryset.select_related("workflow"))
        changed = [t for t in chosen if t.enabled != enabled]
        for trigger in changed:
            trigger_update(trigger=trigger, changes={"enabled": enabled})
        word = "enabled" if enabled else "disabled"
        said = f"{len(changed)} trigger{'' if len(changed) == 1 else 's'} {word}"
        if changed:
            said += ": " + ", ".join(t.name for t in changed)
        already = [t.name for t in chosen if t not in changed]
        if already:
            said += f"; already {word}: {', '.join(already)}"
        self.message_user(request, f"{said}.", level=messages.SUCCESS)


class TriggerRunInline(admin.TabularInline):
    model = TriggerRun
    fields = ["trigger_name", "execution", "error"]
    readonly_fields = ["trigger_name", "execution", "error"]
    extra = 0
    can_delete = False


@admin.register(PublishedEvent)
class EventAdmin(admin.ModelAdmin):
    list_display = ["id", "key", "created_at", "created_by"]
    list_filter = ["key"]
    search_fields = ["key", "idempotency_key"]
    readonly_fields = ["id", "key", "data", "idempotency_key", "created_at", "created_by"]
    inlines = [TriggerRunInline]
    ordering = ["-created_at"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
