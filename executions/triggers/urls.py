"""The routes of event triggers and POST /events, mounted by workflows.urls."""

from __future__ import annotations

from executions.triggers import views
from workflows.rest.routes import both

urlpatterns = [
    *both("triggers", views.TriggerListCreate.as_view(), "trigger-list"),
    *both("triggers/<str:name>", views.TriggerDetail.as_view(), "trigger-detail"),
    *both("events", views.EventCreate.as_view(), "event-create"),
]
