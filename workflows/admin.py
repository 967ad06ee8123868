"""Admin: browse workflows and their versions. Versions are immutable and carry a
validated definition, so they are created through the API (workflows.services) only."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Max, QuerySet
from django.http import HttpRequest

# API tokens, masked, in place of DRF's own page (registered when imported).
from workflows import token_admin  # noqa: F401
from workflows.models import WorkflowDefinition, WorkflowVersion

# One tuple for fields and readonly_fields both (the stubs type `fields` as field groups,
# which readonly_fields may not hold).
_INLINE_VERSION_FIELDS = ("version", "created_at", "created_by", "definition")
_VERSION_FIELDS = ("workflow", "version", "created_at", "created_by", "definition")


class WorkflowVersionInline(admin.TabularInline):
    model = WorkflowVersion
    extra = 0
    can_delete = False
    fields = _INLINE_VERSION_FIELDS
    readonly_fields = _INLINE_VERSION_FIELDS
    ordering = ["version"]
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(WorkflowDefinition)
class WorkflowDefinitionAdmin(admin.ModelAdmin):
    list_display = ["name", "latest_version", "created_at", "created_by"]
    search_fields = ["name", "description", "created_by"]
    readonly_fields = ["name", "created_at", "created_by"]
    fields = ["name", "description", "created_at", "created_by"]
    inlines = [WorkflowVersionInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[WorkflowDefinition]:
        return super().get_queryset(request).annotate(latest_version=Max("versions__version"))

    @admin.display(ordering="latest_version", description="latest version")
    def latest_version(self, obj: WorkflowDefinition) -> int | None:
        return getattr(obj, "latest_version", None)

    def has_add_permission(self, request: HttpRequest) -> bool:
        # A workflow needs a validated version 1: create it with POST /workflows.
        return False


@admin.register(WorkflowVersion)
class WorkflowVersionAdmin(admin.ModelAdmin):
    list_display = ["workflow", "version", "created_at", "created_by"]
    list_filter = ["workflow"]
    list_select_related = ["workflow"]
    search_fields = ["workflow__name", "created_by"]
    fields = _VERSION_FIELDS
    readonly_fields = _VERSION_FIELDS

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
