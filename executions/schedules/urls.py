"""The routes of schedules, mounted by workflows.urls."""

from __future__ import annotations

from executions.schedules import views
from workflows.rest.routes import both

urlpatterns = [
    *both("schedules", views.ScheduleListCreate.as_view(), "schedule-list"),
    # str, not uuid: a malformed id gets the API's JSON 404, not Django's HTML one.
    *both("schedules/<str:schedule_id>", views.ScheduleDetail.as_view(), "schedule-detail"),
    *both(
        "schedules/<str:schedule_id>/backfill",
        views.ScheduleBackfill.as_view(),
        "schedule-backfill",
    ),
]
