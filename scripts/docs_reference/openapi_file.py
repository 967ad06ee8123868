"""docs/reference/openapi.json: the engine's OpenAPI document, as GET /schema serves it
(rest-api.md renders it with Redoc, offline)."""

from __future__ import annotations

import json

from drf_spectacular.generators import SchemaGenerator

from workflows.rest.schema import engine_document


def render() -> str:
    with engine_document():
        schema = SchemaGenerator().get_schema(request=None, public=True)
    # Through JSON once: the document holds lazy translation strings and ordered dicts.
    plain = json.loads(json.dumps(schema, default=str))
    return json.dumps(plain, indent=2, ensure_ascii=False) + "\n"
