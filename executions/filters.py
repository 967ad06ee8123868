"""The executions list's filters (django-filter), shared by GET /executions and the bulk
actions' `filter`: one meaning for "these executions" wherever a client says it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import django_filters
from django import forms
from django.db.models import QuerySet
from django_filters.fields import IsoDateTimeField
from drf_spectacular.utils import extend_schema_field

from executions.engine.statuses import ExecutionStatus, choices
from executions.models import Execution
from executions.selectors import with_failed_nodes, workflow_by_ref
from executions.tags import MAX_TAGS, TagError, parse_filter, with_tags
from workflows.rest.parsers import parse_date_time


def _error(message: str) -> forms.ValidationError:
    """A filter's error. django-filter renders each as `message % params`: a message that
    quotes the client's text, which may hold "%", goes in as a parameter."""
    return forms.ValidationError("%(message)s", code="invalid", params={"message": message})


class UtcIsoDateTimeField(IsoDateTimeField):
    """An RFC 3339 moment (what /schema's date-time says, not all that ISO 8601 allows), as
    UTC: PostgreSQL refuses offsets past 15:59 that RFC 3339 allows (-18:08, say), and a
    moment a few hours from year 1 or 9999 has no UTC form in Python; those are taken as
    the earliest or latest moment there is."""

    def to_python(self, value: Any) -> datetime | None:
        if value in self.empty_values:
            return None
        try:
            moment = parse_date_time(str(value))
        except ValueError as exc:
            raise _error(str(exc)) from None
        try:
            return moment.astimezone(UTC)
        except OverflowError:
            offset = moment.utcoffset()
            later = offset is not None and offset < timedelta(0)
            return datetime.max.replace(tzinfo=UTC) if later else datetime.min.replace(tzinfo=UTC)


class MomentFilter(django_filters.IsoDateTimeFilter):
    field_class = UtcIsoDateTimeField


class TagPairsField(forms.Field):
    """Every `?tag=<key>:<value>` of the query, as (key, value) pairs."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: Any) -> list[tuple[str, str]]:
        if not value:
            return []
        if len(value) > MAX_TAGS:
            raise _error(
                f"At most {MAX_TAGS} tag filters (an execution has at most {MAX_TAGS} tags)."
            )
        try:
            return [parse_filter(str(item)) for item in value]
        except TagError as exc:
            raise _error(f"{exc}.") from None


class TagFilter(django_filters.Filter):
    field_class = TagPairsField


#: What a date-time filter takes, in words.
_MOMENT = "an RFC 3339 date-time, e.g. 2030-01-01T09:00:00Z"
#: A workflow's name is at most 100 characters (and an id fewer digits).
WORKFLOW_REF_MAX = 100


def _expected(filter: django_filters.Filter) -> str:
    """What a filter takes, in words, for the 400 an empty value gets."""
    if isinstance(filter, MomentFilter):
        return _MOMENT
    choices = filter.extra.get("choices")
    if choices:
        return f"one of {', '.join(value for value, _ in choices)}"
    return "a value"


class ExecutionFilter(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(choices=choices(ExecutionStatus), help_text="Only these.")
    workflow = django_filters.CharFilter(
        method="by_workflow", max_length=WORKFLOW_REF_MAX, help_text="A workflow's id or name."
    )
    created_after = MomentFilter(
        field_name="created_at", lookup_expr="gte", help_text=f"Created at or after ({_MOMENT})."
    )
    created_before = MomentFilter(
        field_name="created_at", lookup_expr="lt", help_text=f"Created before ({_MOMENT})."
    )
    # A choice, not a BooleanFilter: that one reads "maybe" as no filter at all.
    has_failed_nodes = django_filters.ChoiceFilter(
        choices=[("true", "true"), ("false", "false")],
        method="by_failed_nodes",
        help_text="true: some node failed; false: none did.",
    )

    tag = TagFilter(
        method="by_tags",
        help_text="<key>:<value>: only executions with this tag; repeat it for more, all of "
        "which must hold.",
    )

    class Meta:
        model = Execution
        fields = ()

    def is_valid(self) -> bool:
        # A form cannot tell "?status=" from no status: both would list every execution,
        # the filter ignored. An empty value is a client's mistake (strict input): say so.
        for name, filter in self.filters.items():
            if self.data.get(name) == "":
                self.form.add_error(
                    name, _error(f"Empty: give {_expected(filter)}, or leave {name} out.")
                )
        return super().is_valid()

    @extend_schema_field(
        {
            "type": "string",
            "minLength": 1,
            "maxLength": WORKFLOW_REF_MAX,
            "description": "A workflow's id or name.",
        }
    )
    def by_workflow(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        found = workflow_by_ref(value)
        return queryset.filter(workflow=found) if found else queryset.none()

    @extend_schema_field(
        {
            "type": "array",
            "items": {"type": "string", "pattern": "^[^:]+:", "example": "team:billing"},
            "maxItems": MAX_TAGS,
        }
    )
    def by_tags(self, queryset: QuerySet, name: str, value: list[tuple[str, str]]) -> QuerySet:
        return with_tags(queryset, value)

    def by_failed_nodes(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return with_failed_nodes(queryset, value == "true")
