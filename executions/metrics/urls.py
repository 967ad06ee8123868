"""The routes of /healthz and /metrics, mounted by workflows.urls."""

from __future__ import annotations

from executions.metrics import views
from workflows.rest.routes import both

urlpatterns = [
    *both("healthz", views.HealthView.as_view(), "healthz"),
    *both("metrics", views.MetricsView.as_view(), "metrics"),
]
