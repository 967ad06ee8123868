"""The definition's JSON Schema as a document of its own, for editors (completion and
checks while a `<app>/workflows/<name>.json` file is written).

The same schema /schema publishes among its components (workflows/definition_schema.py),
with the references made local (`#/definitions/...`) and OpenAPI's own `discriminator`
left out. Its dialect is draft 4, as OpenAPI 3.0's schema objects are (a boolean
`exclusiveMinimum`)."""

from __future__ import annotations

from typing import Any

from workflows.definition_schema import components

DIALECT = "http://json-schema.org/draft-04/schema#"
_OPENAPI_REFS = "#/components/schemas/"


def editor_schema() -> dict[str, Any]:
    """A JSON Schema document whose root is a definition."""
    schemas = {name: _local(schema) for name, schema in components().items()}
    root = schemas.pop("Definition")
    return {
        "$schema": DIALECT,
        "title": "Workflow definition",
        "description": "The definition of a workflow's version: <app>/workflows/<name>.json.",
        **root,
        "definitions": schemas,
    }


def _local(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: (
                item.replace(_OPENAPI_REFS, "#/definitions/", 1)
                if key == "$ref" and isinstance(item, str)
                else _local(item)
            )
            for key, item in value.items()
            if key != "discriminator"
        }
    if isinstance(value, list):
        return [_local(item) for item in value]
    return value
