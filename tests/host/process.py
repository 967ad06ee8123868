"""A probe of tests/host/ run in a process of its own, started on the host's settings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def run_probe(module: str) -> dict[str, Any]:
    """`python -m <module>` with DJANGO_SETTINGS_MODULE=tests.host.settings and nothing of
    this environment's (no WORKFLOW_, DATABASE_URL or CELERY_ variable): what it prints."""
    done = subprocess.run(
        [sys.executable, "-m", module],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "tests.host.settings"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen: dict[str, Any] = json.loads(done.stdout)
    return seen
