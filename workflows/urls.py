from __future__ import annotations

from django.urls import URLPattern, path

from workflows import views


def _both(route: str, view, name: str) -> list[URLPattern]:
    """The route with and without a trailing slash (CONTRACT §4), both named: the name is
    what config.permissions looks permissions up by."""
    return [path(route, view, name=name), path(f"{route}/", view, name=name)]


urlpatterns = [
    *_both("workflows", views.WorkflowListCreate.as_view(), "workflow-list"),
    *_both("workflows/<str:workflow_id>", views.WorkflowDetail.as_view(), "workflow-detail"),
    *_both(
        "workflows/<str:workflow_id>/versions",
        views.WorkflowVersionListCreate.as_view(),
        "workflow-versions",
    ),
]
