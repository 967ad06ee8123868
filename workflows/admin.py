"""Admin: browse workflows and their versions. Versions are immutable and carry a
validated definition, so they are created through the API (workflows.services) only."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Count, Max, Q, QuerySet
from django.http import HttpRequest

from workflows.models import Pool, WorkflowDefinition, WorkflowVersion

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


@admin.register(Pool)
class PoolAdmin(admin.ModelAdmin):
    """Pools with the slots in use now (running attempts naming them) and those free."""

    list_display = ["name", "slots", "used", "free", "waiting", "description", "created_by"]
    search_fields = ["name", "description"]
    fields = ["name", "slots", "description", "created_at", "created_by"]
    readonly_fields = ["created_at", "created_by"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Pool]:
        # By the attempts' status values (executions.models.AttemptStatus): this app
        # sits below executions and does not import it.
        return (
            super()
            .get_queryset(request)
            .annotate(
                used=Count("attempts", filter=Q(attempts__status="running")),
                waiting=Count("attempts", filter=Q(attempts__status="scheduled")),
            )
        )

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        # Definitions name pools: one removed would fail every execution that reaches them.
        return False

    def get_readonly_fields(self, request: HttpRequest, obj: object = None) -> list[str]:
        # The name is what definitions refer to: fixed once created.
        return [*self.readonly_fields, "name"] if obj is not None else self.readonly_fields

    @admin.display(ordering="used", description="used")
    def used(self, obj: Pool) -> int:
        return getattr(obj, "used", 0)

    @admin.display(description="free")
    def free(self, obj: Pool) -> int:
        return max(obj.slots - getattr(obj, "used", 0), 0)

    @admin.display(ordering="waiting", description="waiting")
    def waiting(self, obj: Pool) -> int:
        return getattr(obj, "waiting", 0)
