from __future__ import annotations

from django.urls import URLPattern, path

from schedules import views


def _both(route: str, view, name: str) -> list[URLPattern]:
    """The route with and without a trailing slash (CONTRACT §4), both named: the name is
    what config.permissions looks permissions up by."""
    return [path(route, view, name=name), path(f"{route}/", view, name=name)]


urlpatterns = [
    *_both("schedules", views.ScheduleListCreate.as_view(), "schedule-list"),
    # str, not uuid: a malformed id gets the API's JSON 404, not Django's HTML one.
    *_both("schedules/<str:schedule_id>", views.ScheduleDetail.as_view(), "schedule-detail"),
]
