"""docs/reference/settings.md from workflows.conf.SETTINGS, the one table of the engine's
settings (the bounds of workflows/dsl/limits.py are in it)."""

from __future__ import annotations

import ast
import tempfile
from pathlib import Path
from typing import Any

from config.environment import VARIABLES
from scripts.docs_reference.markdown import GENERATED, Undocumented, as_json, code, table
from workflows.conf import PREFIX, SECRET_PREFIX, SETTINGS

ROOT = Path(__file__).resolve().parents[2]
STANDALONE_SETTINGS = ROOT / "config" / "settings.py"
#: The calls config/settings.py reads a variable with: the name is the first argument.
_READERS = {"get", "getenv", "_flag", "_list"}


def variables_read(source: str) -> set[str]:
    """The environment variables a settings module reads (by the calls above, or
    os.environ[...])."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            first = node.args[0]
            if name in _READERS and isinstance(first, ast.Constant):
                found.add(str(first.value))
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.Constant)
            and ast.unparse(node.value) == "os.environ"
        ):
            found.add(str(node.slice.value))
    return found


def _standalone() -> str:
    engine = {PREFIX + name for name in SETTINGS}
    missing = sorted(variables_read(STANDALONE_SETTINGS.read_text()) - set(VARIABLES) - engine)
    if missing:
        raise Undocumented(
            f"config/settings.py reads {missing}, which config/environment.py (VARIABLES) "
            "does not describe"
        )
    rows = [(code(name), var.default, var.description) for name, var in VARIABLES.items()]
    return table(("Variable", "Default", "Meaning"), rows)


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
        + "## The engine's settings\n\n"
        + "Every setting of the engine, with its default. A project sets one as "
        "`WORKFLOW_<NAME>` in its Django settings; the standalone project (and its Docker "
        "image) reads each from the environment variable of the same name, as text "
        '(`"2.5"`, `"1"`, `"a,b"`, `"http:http"`). A wrong value stops the process at '
        "start with a message naming the setting. Secrets come one variable each, "
        f"`{SECRET_PREFIX}<NAME>`.\n\n"
        + table(("Setting", "Default", "Meaning"), rows)
        + "\n## The standalone project's environment\n\n"
        + "What the standalone project (`config/`, the Docker image) reads besides the "
        "engine's settings above; a Django project of your own has its own settings for "
        "these.\n\n" + _standalone()
    )
