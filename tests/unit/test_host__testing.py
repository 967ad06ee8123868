"""A host project tests its workflows in its own pytest-django suite: tests/host/'s app
keeps a definition file (shop/workflows/order-follow-up.json, with an approval and a
day's delay) and its suite (tests/host/suite/, the README's example test among it) runs
it with workflows.testing, in a pytest of its own on the host's settings."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOST = ROOT / "tests" / "host"
SUITE = HOST / "suite"


def readme_block(language: str, first_line: str) -> str:
    """The README's fenced block of `language` whose first line is `first_line` (that
    line left out)."""
    readme = (ROOT / "README.md").read_text()
    for block in re.findall(rf"```{language}\n(.*?)```", readme, re.DOTALL):
        head, _, rest = block.partition("\n")
        if head.strip() == first_line:
            return rest
    raise AssertionError(f"README has no {language} block starting {first_line!r}")


def test_the_readme_s_example_test_is_the_host_s_test() -> None:
    example = readme_block("python", "# shop/tests/test_order_follow_up.py")
    assert example == (SUITE / "test_order_follow_up.py").read_text()


def test_the_readme_s_workflow_is_the_host_s_definition_file() -> None:
    readme = (ROOT / "README.md").read_text()
    found = re.search(
        r"`shop/workflows/order-follow-up.json`:\n\n```json\n(.*?)```", readme, re.DOTALL
    )
    assert found, "README shows no shop/workflows/order-follow-up.json"
    shown = found.group(1)
    kept = (HOST / "shop" / "workflows" / "order-follow-up.json").read_text()
    assert json.loads(shown) == json.loads(kept)


def test_the_host_s_own_suite_runs_its_workflows_with_the_harness() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", "pytest.ini", "-q", "-p", "no:cacheprovider"],
        cwd=SUITE,
        # Nothing of this environment's (no DATABASE_URL, WORKFLOW_ or CELERY_ variable):
        # the host's settings alone, an SQLite database and an in-memory broker.
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"\b2 passed\b", done.stdout), done.stdout
