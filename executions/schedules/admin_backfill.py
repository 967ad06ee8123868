"""The admin's backfill page of a schedule: a start and an end, then the same service as
POST /schedules/{id}/backfill, its refusals shown on the form."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse

from executions.schedules.backfill import schedule_backfill
from executions.schedules.models import Schedule

#: Backfilling starts executions: both permissions, as the API asks.
BACKFILL_PERMISSIONS = ("executions.change_schedule", "executions.add_execution")
_LOCAL = forms.DateTimeInput(
    attrs={"type": "datetime-local", "step": 1}, format="%Y-%m-%dT%H:%M:%S"
)


class BackfillForm(forms.Form):
    start = forms.DateTimeField(widget=_LOCAL, help_text="UTC: the first fire time that may run.")
    end = forms.DateTimeField(
        widget=_LOCAL, help_text="UTC, not after now: the last one (included)."
    )


def backfill_view(
    model_admin: admin.ModelAdmin, request: HttpRequest, object_id: str
) -> HttpResponse:
    if not request.user.has_perms(BACKFILL_PERMISSIONS):
        raise PermissionDenied
    schedule = get_object_or_404(Schedule.objects.select_related("workflow"), pk=object_id)
    back = reverse("admin:executions_schedule_change", args=[schedule.pk])
    form = BackfillForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            done = schedule_backfill(
                schedule=schedule, start=form.cleaned_data["start"], end=form.cleaned_data["end"]
            )
        except ValidationError as error:
            for field, problems in error.message_dict.items():
                form.add_error(field if field in form.fields else None, problems)
        else:
            messages.success(
                request,
                f"Backfill started {len(done.started)} execution(s); "
                f"{len(done.already_ran)} fire time(s) had run already.",
            )
            return HttpResponseRedirect(back)
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": Schedule._meta,
        "schedule": schedule,
        "form": form,
        "back": back,
        "title": f"Backfill {schedule}",
    }
    return TemplateResponse(request, "admin/executions/schedule/backfill.html", context)
