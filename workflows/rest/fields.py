"""Serializer fields that take exactly the JSON type the schema documents.

DRF's own fields coerce: a CharField takes 5 and stores "5", an IntegerField takes "5" or
5.0, a BooleanField takes "yes". The OpenAPI schema promises a type; accepting another
one makes the schema a lie (schemathesis' negative_data_rejection check finds every such
field), so the API's bodies use these instead.
"""

from __future__ import annotations

import re
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from workflows.rest.parsers import parse_date_time

#: The largest value of a 64-bit signed id column; anything larger cannot be an id.
MAX_ID = 2**63 - 1
#: PositiveIntegerField's range on every backend (version numbers, seqs).
MAX_INT32 = 2**31 - 1
#: A workflow name (workflows.models.slug_validator); digits only reads as an id first.
WORKFLOW_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,99}")


class StrictCharField(serializers.CharField):
    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictSlugField(StrictCharField, serializers.SlugField):
    """Text only, then a slug: DRF's SlugField takes 0 and stores "0"."""


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class StrictDateTimeField(serializers.DateTimeField):
    """An RFC 3339 date-time, as format: date-time says: DRF's takes anything ISO 8601
    allows (a bare date, no offset, 20300101)."""

    def to_internal_value(self, value: Any) -> Any:
        if not isinstance(value, str):
            self.fail("invalid", format="RFC 3339")
        try:
            moment = parse_date_time(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc), code="invalid") from None
        return self.enforce_timezone(moment)


class StrictUUIDField(serializers.UUIDField):
    """Text only: DRF's UUIDField takes an integer (and so false, true) as UUID(int=...)."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid", value=data)
        return super().to_internal_value(data)


@extend_schema_field(
    {
        "oneOf": [
            {"type": "integer", "minimum": 1, "maximum": MAX_ID, "description": "The id."},
            {
                "type": "string",
                "pattern": f"^{WORKFLOW_NAME.pattern}$",
                "maxLength": 100,
                "description": "The name (a slug); a name of digits only is read as an id.",
            },
        ],
    }
)
class WorkflowRefField(serializers.Field):
    """A workflow by numeric id or by name, bounded before it reaches int() or a query
    (a 5,000-digit string would otherwise hit Python's int conversion limit: a 500)."""

    default_error_messages = {
        "invalid": "Give the workflow's numeric id (1 to 2^63-1) or its name (a slug of at "
        "most 100 characters).",
    }

    def to_internal_value(self, data: Any) -> int | str:
        if isinstance(data, bool):
            self.fail("invalid")
        if isinstance(data, int) and 1 <= data <= MAX_ID:
            return data
        if isinstance(data, str) and WORKFLOW_NAME.fullmatch(data):
            return data
        self.fail("invalid")

    def to_representation(self, value: Any) -> Any:
        return value
