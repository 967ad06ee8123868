"""docs/reference/settings.md from workflows.conf.SETTINGS, the one table of the engine's
settings (the bounds of workflows/dsl/limits.py are in it)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from scripts.docs_reference.markdown import GENERATED, Undocumented, as_json, code, table
from workflows.conf import PREFIX, SECRET_PREFIX, SETTINGS


def shown(default: Any) -> str:
    """The default as a reader would write it (a path under the temp dir as such)."""
    if isinstance(default, Path):
        temp = Path(tempfile.gettempdir())
        if default.is_relative_to(temp):
            return code(f"<temp dir>/{default.relative_to(temp)}")
        return code(str(default))
    if default is None:
        return "None"
    if isinstance(default, float) and default.is_integer() and abs(default) >= 1e6:
        return code(f"{default:,.0f}".replace(",", "_"))
    if isinstance(default, int) and not isinstance(default, bool) and abs(default) >= 10_000:
        return code(f"{default:_}")
    return code(as_json(default) if isinstance(default, list | dict | str) else repr(default))


def render() -> str:
    rows = []
    for name, spec in SETTINGS.items():
        if not spec.description.strip():
            raise Undocumented(f"{PREFIX}{name} has no description in workflows/conf.py")
        rows.append((code(PREFIX + name), shown(spec.default), spec.description))
    return (
        GENERATED
        + "# Settings\n\n"
        + "Every setting of the engine, with its default. A project sets one as "
        "`WORKFLOW_<NAME>` in its Django settings; the standalone project (and its Docker "
        "image) reads each from the environment variable of the same name, as text "
        '(`"2.5"`, `"1"`, `"a,b"`, `"http:http"`). A wrong value stops the process at '
        "start with a message naming the setting. Secrets come one variable each, "
        f"`{SECRET_PREFIX}<NAME>`.\n\n" + table(("Setting", "Default", "Meaning"), rows)
    )
