"""What the Docker build sees and what the wheel holds, computed the way Docker and pip do.

The Dockerfile's build stage copies the build context (the repository's files less what
.dockerignore excludes) and builds the project's wheel from it; the image installs that
wheel. These helpers make the same context from the tracked files and build the same
wheel, so the tests check what an image would contain without a container engine.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def tracked_files() -> list[str]:
    """The repository's files as a fresh clone has them (paths relative to ROOT)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode()  # fmt: skip
    return sorted(p for p in listed.split("\0") if p and (ROOT / p).is_file())


def _pattern(glob: str) -> re.Pattern[str]:
    """Docker's pattern syntax (Go's filepath.Match plus `**` for any directories)."""
    out, i = "", 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif glob.startswith("**", i):
            out, i = out + ".*", i + 2
        elif glob[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif glob[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(glob[i]), i + 1
    return re.compile(out + r"\Z")


@cache
def dockerignore_rules() -> tuple[tuple[bool, re.Pattern[str]], ...]:
    """(excludes, pattern) in file order; a `!` line re-includes what it matches."""
    rules = []
    for raw in (ROOT / ".dockerignore").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        excludes = not line.startswith("!")
        rules.append((excludes, _pattern(line.removeprefix("!").strip().strip("/"))))
    return tuple(rules)


def in_build_context(path: str) -> bool:
    """Docker's rule: the last pattern matching the path or one of its parent folders wins."""
    parts = path.split("/")
    candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    included = True
    for excludes, pattern in dockerignore_rules():
        if any(pattern.match(candidate) for candidate in candidates):
            included = not excludes
    return included


def build_context(destination: Path) -> Path:
    """Copy the build context (tracked files .dockerignore admits) to `destination`."""
    for path in tracked_files():
        if in_build_context(path):
            target = destination / path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / path, target)
    return destination


def build_wheel(context: Path, out: Path) -> Path:
    """`pip wheel --no-deps .` in the context, as the Dockerfile's build stage runs it."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(out), "."],
        cwd=context, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"pip wheel failed:\n{done.stdout}\n{done.stderr}"
    (wheel,) = out.glob("*.whl")
    return wheel


def wheel_files(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())
