"""Routes as the API serves them: each with and without a trailing slash."""

from __future__ import annotations

from typing import Any

from django.urls import URLPattern, path


def both(route: str, view: Any, name: str) -> list[URLPattern]:
    """The route with and without a trailing slash, both named: the name is what
    workflows.rest.permissions looks permissions up by."""
    return [path(route, view, name=name), path(f"{route}/", view, name=name)]
