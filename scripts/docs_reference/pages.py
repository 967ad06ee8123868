"""Every generated file of docs/reference/, and how to tell which committed ones differ."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from pathlib import Path

from scripts.docs_reference import (
    commands_page,
    dsl_page,
    events_page,
    openapi_file,
    settings_page,
)

#: File name under docs/reference/ -> what writes it.
GENERATORS: Mapping[str, Callable[[], str]] = {
    "settings.md": settings_page.render,
    "dsl.md": dsl_page.render,
    "commands.md": commands_page.render,
    "events-statuses.md": events_page.render,
    "openapi.json": openapi_file.render,
}


def generate() -> dict[str, str]:
    return {name: render() for name, render in GENERATORS.items()}


def stale(pages: Mapping[str, str], directory: Path) -> list[str]:
    """One line per file of `pages` that `directory` lacks or holds otherwise, with the
    first lines that differ."""
    problems = []
    for name, text in pages.items():
        path = directory / name
        if not path.exists():
            problems.append(f"docs/reference/{name}: missing")
            continue
        committed = path.read_text()
        if committed != text:
            diff = difflib.unified_diff(
                committed.splitlines(),
                text.splitlines(),
                "committed",
                "generated",
                n=0,
                lineterm="",
            )
            shown = "\n    ".join(list(diff)[2:8])
            problems.append(f"docs/reference/{name}: differs from the code's\n    {shown}")
    return problems
