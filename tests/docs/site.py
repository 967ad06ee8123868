"""The documentation site built once per test session, the way `./dev docs` builds it
(mkdocs.yml, strict), into a temporary directory; tests/docs and tests/browser share it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.ci import missing

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Built:
    site: Path
    #: mkdocs' own report: a warning here would have failed the strict build.
    log: str


_built: list[Built] = []


def build_once() -> Built:
    if _built:
        return _built[0]
    if importlib.util.find_spec("mkdocs") is None:
        missing("needs the [docs] extra (mkdocs): ./dev installs it into .venv")
    site = Path(tempfile.mkdtemp(prefix="workflow-docs-site-")) / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    log = done.stdout + done.stderr
    assert done.returncode == 0, f"mkdocs build --strict failed (./dev docs shows it):\n{log}"
    _built.append(Built(site, log))
    return _built[0]
