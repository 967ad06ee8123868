from __future__ import annotations

from django.urls import URLPattern, path

from monitoring import views


def _both(route: str, view, name: str) -> list[URLPattern]:
    """The route with and without a trailing slash (CONTRACT §4), both named: the name is
    what config.permissions looks permissions up by."""
    return [path(route, view, name=name), path(f"{route}/", view, name=name)]


urlpatterns = [
    *_both("healthz", views.HealthView.as_view(), "healthz"),
    *_both("metrics", views.MetricsView.as_view(), "metrics"),
]
