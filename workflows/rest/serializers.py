"""Serializer helpers shared by the apps' APIs."""

from __future__ import annotations

from typing import Any

from django.utils.functional import cached_property
from rest_framework import serializers


# A read-only serializer whose fields are built once per class, not per instance.
#
# DRF builds a ModelSerializer's fields (deep copies of the declared ones and one per model
# field, through its field mapping) every time one is made: most of what serializing one
# row costs (an execution: 0.3 of 0.35 ms), paid by every response that serializes a single
# row (POST /executions). Its fields here are bound once, to an instance made without data
# or context, and shared: none of them reads the context or keeps anything between calls,
# and none is changed after it is bound. Only for serializers whose fields are all
# read-only and read no context. No docstring: drf-spectacular would describe every
# serializer made with it by it in /schema (it reads the first docstring of the classes
# above DRF's own).
class FieldsOnce(serializers.Serializer):
    @cached_property
    def fields(self) -> Any:  # DRF's BindingDict
        cls = type(self)
        shared = cls.__dict__.get("_fields_once")
        if shared is None:
            # Built by DRF's own property, on a bare instance of this class.
            shared = serializers.Serializer.fields.func(cls())  # type: ignore[attr-defined]
            cls._fields_once = shared  # type: ignore[attr-defined]
        return shared
