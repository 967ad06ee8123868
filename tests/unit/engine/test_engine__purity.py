"""The engine core imports no Django, Celery or I/O library (ARCHITECTURE.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_core_imports_nothing_from_django_or_celery() -> None:
    code = (
        "import sys\n"
        "import executions.engine.decide, executions.engine.fold, executions.engine.verify\n"
        "import executions.engine.maps, executions.engine.compensation\n"
        "import executions.engine.chain, executions.engine.payloads, executions.engine.admission\n"
        "import workflows.dsl.parser, workflows.dsl.concurrency, workflows.kinds\n"
        "workflows.kinds.all_kinds()\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'django', 'celery', 'kombu', 'httpx', 'psycopg', 'redis'})\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert result.stdout.strip() == "", f"the core pulled in: {result.stdout.strip()}"
