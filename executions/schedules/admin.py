"""Admin: browse schedules, pause/resume them, change their overlap and catch-up
policies, delete them, and see what each fire time came to. Every write goes through
executions.schedules.services, validated as PATCH /schedules/{id} validates
(workflows.rest.admin_forms), so the beat's PeriodicTask stays in step; creating needs the
validation of POST /schedules, so it is done through the API."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from executions.console.readonly import ReadOnlyAdminMixin
from executions.schedules.admin_backfill import backfill_view
from executions.schedules.models import Schedule, ScheduleFire
from executions.schedules.serializers import ScheduleUpdateSerializer
from executions.schedules.services import schedule_delete, schedule_update
from workflows.rest.admin_forms import ApiValidatedForm

#: What the change form edits; everything else is shown read-only.
_EDITABLE = ("enabled", "overlap", "catchup", "catchup_window_seconds", "jitter_seconds")
_GROUPS: tuple[tuple[str | None, tuple[str, ...]], ...] = (
    (None, ("workflow", "version", "cron", "timezone", "input")),
    ("Policies", _EDITABLE),
    ("Fires", ("last_fire_at", "recent_fires", "backfill")),
    ("Audit", ("created_at", "created_by", "updated_at", "updated_by")),
)
_READONLY = [name for _, names in _GROUPS for name in names if name not in _EDITABLE]
#: How many fires the change page shows (the ScheduleFire list has them all).
RECENT_FIRES = 10


#: The API's words for each choice, with what it does (the form shows these).
_CHOICES = {
    "overlap": [
        ("allow", "allow: start anyway"),
        ("skip", "skip: start nothing while one runs"),
        ("buffer_one", "buffer_one: keep one fire, started when the running one ends"),
        ("cancel_other", "cancel_other: cancel the running ones, then start"),
    ],
    "catchup": [
        ("none", "none: run no fire missed while beat was down"),
        ("last", "last: run the latest missed fire"),
        ("all", "all: run every missed fire within the window, oldest first"),
    ],
}


class ScheduleForm(ApiValidatedForm):
    serializer = ScheduleUpdateSerializer

    class Meta:
        model = Schedule
        fields = list(_EDITABLE)
        labels = {
            "catchup": "Catch-up",
            "catchup_window_seconds": "Catch-up window (seconds)",
            "jitter_seconds": "Jitter (seconds)",
        }
        help_texts = {
            "overlap": "What a fire does while an execution this schedule started still runs.",
            "catchup_window_seconds": "With catch-up 'all': how far back a missed fire still runs.",
            "jitter_seconds": "Each fire starts a fixed 0 to this many seconds after its time.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, choices in _CHOICES.items():
            field = self.fields[name]
            assert isinstance(field, forms.ChoiceField)  # the model's choices: same values
            field.choices = choices
        self.fields["jitter_seconds"].required = False

    def clean_jitter_seconds(self) -> int:
        # Left out (a form from before the field, a script posting the others): unchanged.
        value = self.cleaned_data.get("jitter_seconds")
        return self.instance.jitter_seconds if value is None else value


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
        "short_id",
        "workflow",
        "version",
        "when",
        "enabled",
        "policies",
        "next_run",
        "created_by",
        "updated_by",
    ]
    list_filter = ["enabled", "overlap", "workflow"]
    list_select_related = ["workflow", "version"]
    search_fields = ["workflow__name", "cron"]
    fieldsets = [(title, {"fields": names}) for title, names in _GROUPS]
    readonly_fields = _READONLY

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.display(description="schedule", ordering="id")
    def short_id(self, obj: Schedule) -> str:
        return format_html('<span title="{}">{}…</span>', obj.pk, str(obj.pk)[:8])

    @admin.display(description="cron", ordering="cron")
    def when(self, obj: Schedule) -> str:
        # One line: a cron's fields wrapped one under another read as a different cron.
        return format_html(
            '<span style="white-space: nowrap">{} ({})</span>', obj.cron, obj.timezone
        )

    @admin.display(description="next run (UTC)")
    def next_run(self, obj: Schedule) -> str:
        when = obj.next_run_at
        return "paused" if when is None else f"{when:%Y-%m-%d\N{NO-BREAK SPACE}%H:%M}"

    @admin.display(description="overlap / catch-up")
    def policies(self, obj: Schedule) -> str:
        window = f" {obj.catchup_window_seconds}\N{NO-BREAK SPACE}s" if obj.catchup == "all" else ""
        return f"{obj.overlap} / {obj.catchup}{window}"

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
            reverse("admin:executions_schedulefire_changelist") + f"?schedule__id__exact={obj.pk}"
        )
        return format_html(
            '<table class="wf-fires"><thead><tr><th>fire time</th><th>outcome</th>'
            "<th>execution</th></tr></thead><tbody>{}</tbody></table>"
            '<p><a href="{}">Every fire of this schedule</a></p>',
            rows,
            every,
        )

    @admin.display(description="backfill")
    def backfill(self, obj: Schedule) -> str:
        url = reverse("admin:executions_schedule_backfill", args=[obj.pk])
        return format_html(
            '<a class="button" id="wf-backfill" href="{}">Backfill past fire times…</a>', url
        )

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path(
                "<path:object_id>/backfill/",
                view(lambda request, object_id: backfill_view(self, request, object_id)),
                name="executions_schedule_backfill",
            ),
            *super().get_urls(),
        ]

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
    """One row per (schedule, fire time): what the beat or a backfill made of it, and when
    its execution was due to begin (fire time plus jitter). Written only by
    executions.schedules.services and executions.schedules.backfill."""

    list_display = [
        "fire_time",
        "schedule",
        "outcome",
        "execution_column",
        "delay",
        "backfill",
        "created_at",
    ]
    list_filter = ["schedule", "outcome", "backfill"]
    list_select_related = ["schedule__workflow"]
    date_hierarchy = "fire_time"
    ordering = ["-fire_time"]
    readonly_fields = [
        "schedule",
        "fire_time",
        "outcome",
        "execution_column",
        "start_at",
        "backfill",
        "created_at",
    ]
    fields = tuple(readonly_fields)

    @admin.display(description="execution", ordering="execution_id")
    def execution_column(self, obj: ScheduleFire) -> str:
        return execution_link(obj.execution_id)

    @admin.display(description="jitter")
    def delay(self, obj: ScheduleFire) -> str:
        """How long after its fire time its execution was due to begin."""
        if obj.start_at is None:
            return "—"
        return f"+{(obj.start_at - obj.fire_time).total_seconds():.3f}\N{NO-BREAK SPACE}s"

    def get_actions(self, request: HttpRequest):
        return {}  # no bulk delete: the fires are the schedule's record
