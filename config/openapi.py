"""drf-spectacular hooks."""

from __future__ import annotations

from typing import Any

Endpoint = tuple[str, str, str, Any]


def drop_trailing_slash_duplicates(endpoints: list[Endpoint], **kwargs: Any) -> list[Endpoint]:
    """Document each route once: every path is served with and without a trailing slash
    (CONTRACT §4), and listing both gives two operations with one operationId."""
    paths = {path for path, *_ in endpoints}
    return [
        endpoint
        for endpoint in endpoints
        if not (endpoint[0].endswith("/") and endpoint[0].rstrip("/") in paths)
    ]
