"""The executions list's filters (django-filter), shared by GET /executions and the bulk
actions' `filter`: one meaning for "these executions" wherever a client says it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import django_filters
from django.db.models import QuerySet
from django_filters.fields import IsoDateTimeField

from executions.engine.statuses import ExecutionStatus, choices
from executions.models import Execution
from executions.selectors import with_failed_nodes, workflow_by_ref


class UtcIsoDateTimeField(IsoDateTimeField):
    """An ISO 8601 moment, as UTC: PostgreSQL refuses offsets past 15:59 that ISO allows
    (-18:08, say), and a moment a few hours from year 1 or 9999 has no UTC form in Python;
    those are taken as the earliest or latest moment there is."""

    def to_python(self, value: Any) -> datetime | None:
        moment = super().to_python(value)
        if moment is None:
            return None
        try:
            return moment.astimezone(UTC)
        except OverflowError:
            offset = moment.utcoffset()
            later = offset is not None and offset < timedelta(0)
            return datetime.max.replace(tzinfo=UTC) if later else datetime.min.replace(tzinfo=UTC)


class MomentFilter(django_filters.IsoDateTimeFilter):
    field_class = UtcIsoDateTimeField


class ExecutionFilter(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(choices=choices(ExecutionStatus), help_text="Only these.")
    workflow = django_filters.CharFilter(
        method="by_workflow", max_length=100, help_text="A workflow's id or name."
    )
    created_after = MomentFilter(
        field_name="created_at", lookup_expr="gte", help_text="Created at or after (ISO 8601)."
    )
    created_before = MomentFilter(
        field_name="created_at", lookup_expr="lt", help_text="Created before (ISO 8601)."
    )
    # A choice, not a BooleanFilter: that one reads "maybe" as no filter at all.
    has_failed_nodes = django_filters.ChoiceFilter(
        choices=[("true", "true"), ("false", "false")],
        method="by_failed_nodes",
        help_text="true: some node failed; false: none did.",
    )

    class Meta:
        model = Execution
        fields = ()

    def is_valid(self) -> bool:
        # A form cannot tell "?status=" from no status: both would list every execution.
        # An empty status is a client's mistake (strict input): say so.
        if self.data.get("status") == "":
            self.form.add_error("status", f"Empty; one of {[s.value for s in ExecutionStatus]}.")
        return super().is_valid()

    def by_workflow(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        found = workflow_by_ref(value)
        return queryset.filter(workflow=found) if found else queryset.none()

    def by_failed_nodes(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return with_failed_nodes(queryset, value == "true")
