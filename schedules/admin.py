"""Admin: browse schedules, pause/resume them, change their overlap and catch-up
policies, delete them, and see what each fire time came to. Every write goes through
schedules.services, validated as PATCH /schedules/{id} validates (config.admin_forms), so
the beat's PeriodicTask stays in step; creating needs the validation of POST /schedules,
so it is done through the API."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from config.admin_forms import ApiValidatedForm
from executions.admin import ReadOnlyAdminMixin
from schedules.models import Schedule, ScheduleFire
from schedules.serializers import ScheduleUpdateSerializer
from schedules.services import schedule_delete, schedule_update

#: What the change form edits; everything else is shown read-only.
_EDITABLE = ("enabled", "overlap", "catchup", "catchup_window_seconds")
# The stubs type `fields` as field groups, which readonly_fields may not hold.
_FIELDS = (
    "workflow",
    "version",
    "cron",
    "timezone",
    "input",
    *_EDITABLE,
    "last_fire_at",
    "created_at",
    "created_by",
    "updated_at",
    "updated_by",
    "recent_fires",
)
#: How many fires the change page shows (the ScheduleFire list has them all).
RECENT_FIRES = 10


class ScheduleForm(ApiValidatedForm):
    serializer = ScheduleUpdateSerializer

    class Meta:
        model = Schedule
        fields = list(_EDITABLE)
        help_texts = {
            "overlap": "While an execution it started runs: allow, skip, buffer_one (keep one "
            "fire for when it ends) or cancel_other.",
            "catchup": "Fire times missed while beat was down: none, last, or all within the "
            "window.",
            "catchup_window_seconds": "With catch-up 'all': how far back a missed fire still runs.",
        }


def execution_link(execution_id: object) -> str:
    """A link to the execution's console, or a dash when the fire started none."""
    if execution_id is None:
        return "—"
    url = reverse("admin:executions_execution_change", args=[execution_id])
    return format_html('<a href="{}">{}…</a>', url, str(execution_id)[:8])


@admin.register(Schedule)
class ScheduleAdmin(admin.ModelAdmin):
    form = ScheduleForm
    list_display = [
        "id",
        "workflow",
        "version",
        "cron",
        "timezone",
        "enabled",
        "overlap",
        "catchup",
        "next_run_at",
        "created_by",
        "updated_by",
    ]
    list_filter = ["enabled", "overlap", "catchup", "workflow"]
    list_select_related = ["workflow", "version"]
    search_fields = ["workflow__name", "cron"]
    fields = _FIELDS
    readonly_fields = [f for f in _FIELDS if f not in _EDITABLE]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.display(description="recent fires")
    def recent_fires(self, obj: Schedule) -> SafeString | str:
        fires = list(obj.fires.order_by("-fire_time")[:RECENT_FIRES])
        if not fires:
            return "none yet"
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    f"{fire.fire_time:%Y-%m-%d %H:%M:%S} UTC",
                    fire.outcome,
                    execution_link(fire.execution_id),
                )
                for fire in fires
            ),
        )
        every = (
            reverse("admin:schedules_schedulefire_changelist") + f"?schedule__id__exact={obj.pk}"
        )
        return format_html(
            '<table class="wf-fires"><thead><tr><th>fire time</th><th>outcome</th>'
            "<th>execution</th></tr></thead><tbody>{}</tbody></table>"
            '<p><a href="{}">Every fire of this schedule</a></p>',
            rows,
            every,
        )

    def save_model(
        self, request: HttpRequest, obj: Schedule, form: ScheduleForm, change: bool
    ) -> None:
        if form.changes:
            schedule_update(schedule=obj, changes=form.changes, by=request.user.get_username())

    def delete_model(self, request: HttpRequest, obj: Schedule) -> None:
        schedule_delete(schedule=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        for schedule in queryset:
            schedule_delete(schedule=schedule)


@admin.register(ScheduleFire)
class ScheduleFireAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """One row per (schedule, fire time): what the beat made of it. Written only by
    schedules.services.schedule_run."""

    list_display = ["fire_time", "schedule", "outcome", "execution_column", "created_at"]
    list_filter = ["schedule", "outcome"]
    list_select_related = ["schedule__workflow"]
    date_hierarchy = "fire_time"
    ordering = ["-fire_time"]
    fields = ["schedule", "fire_time", "outcome", "execution_column", "created_at"]
    readonly_fields = fields

    @admin.display(description="execution", ordering="execution_id")
    def execution_column(self, obj: ScheduleFire) -> str:
        return execution_link(obj.execution_id)

    def get_actions(self, request: HttpRequest):
        return {}  # no bulk delete: the fires are the schedule's record
