"""Admin pages of records the engine writes: browsed, never added, changed or deleted."""

from __future__ import annotations


class ReadOnlyAdminMixin:
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
