"""Admin change forms validated exactly as the API validates the same change.

The fields a person changed go through the API's PATCH serializer, then through the
service's own checks (a Django ValidationError keyed by field); every message lands on its
field of the form, and `changes` is what the admin hands the service to write. So the
admin can never store what PATCH would refuse, and no rule is written twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from django import forms
from django.core.exceptions import ValidationError
from rest_framework import serializers


class ApiValidatedForm(forms.ModelForm):
    #: The API's PATCH serializer for this model.
    serializer: ClassVar[type[serializers.Serializer]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: The validated changes (only the fields changed), once is_valid() holds.
        self.changes: dict[str, Any] = {}

    def check(self, changes: dict[str, Any]) -> None:
        """The service's checks of `changes`: raise a ValidationError keyed by field."""

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.errors:
            return cleaned
        accepted = self.serializer().fields
        data = {name: cleaned.get(name) for name in self.changed_data if name in accepted}
        body = self.serializer(data=data)
        if not body.is_valid():
            self._add_errors(body.errors)
            return cleaned
        try:
            self.check(dict(body.validated_data))
        except ValidationError as exc:
            self._add_errors(exc.message_dict)
            return cleaned
        self.changes = dict(body.validated_data)
        return cleaned

    def _add_errors(self, errors: Mapping[str, Any]) -> None:
        for field, messages in errors.items():
            listed = messages if isinstance(messages, list) else [messages]
            self.add_error(field if field in self.fields else None, [str(m) for m in listed])
