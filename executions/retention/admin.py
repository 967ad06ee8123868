"""The tombstones of purged executions in the admin: browsed, never added, changed or
deleted (a tombstone is the tamper evidence of a log that is no longer here)."""

from __future__ import annotations

from django.contrib import admin

from executions.console.changelist import EstimatedCountPaginator
from executions.console.readonly import ReadOnlyAdminMixin
from executions.retention.models import Tombstone


@admin.register(Tombstone)
class TombstoneAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["id", "workflow", "version", "status", "ended_at", "purged_at", "events"]
    list_filter = ["status", "workflow"]
    list_select_related = ["workflow", "version"]
    search_fields = ["=id"]
    date_hierarchy = "purged_at"
    readonly_fields = [
        "id", "workflow", "version", "status", "ended_at", "purged_at", "events", "last_hash",
    ]  # fmt: skip
    paginator = EstimatedCountPaginator
    show_full_result_count = False
