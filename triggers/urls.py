from __future__ import annotations

from django.urls import URLPattern, path

from triggers import views


def _both(route: str, view, name: str) -> list[URLPattern]:
    """The route with and without a trailing slash, both named (config.permissions)."""
    return [path(route, view, name=name), path(f"{route}/", view, name=name)]


urlpatterns = [
    *_both("triggers", views.TriggerListCreate.as_view(), "trigger-list"),
    *_both("triggers/<str:name>", views.TriggerDetail.as_view(), "trigger-detail"),
    *_both("events", views.EventCreate.as_view(), "event-create"),
]
