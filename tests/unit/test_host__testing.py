"""A host project tests its workflows in its own pytest-django suite: tests/host/'s app
keeps a definition file (shop/workflows/order-follow-up.json, with an approval and a
day's delay) and its suite (tests/host/suite/, the testing page's example test among it)
runs it with workflows.testing, in a pytest of its own on the host's settings."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOST = ROOT / "tests" / "host"
SUITE = HOST / "suite"
#: The page that teaches testing a workflow, with the host's test and definition file.
PAGE = ROOT / "docs" / "how-to" / "testing-workflows.md"


def shown(block: str) -> str:
    """What the reader sees of a fenced block: a snippet include (`--8<-- "path"`) is
    the included file, as the site renders it."""
    included = re.fullmatch(r'--8<-- "([^"]+)"\n', block)
    return (ROOT / included.group(1)).read_text() if included else block


def page_block(language: str, after: str) -> str:
    """The page's fenced block of `language` that follows the line `after`."""
    page = PAGE.read_text()
    found = re.search(rf"{re.escape(after)}\n\n```{language}\n(.*?)```", page, re.DOTALL)
    assert found, f"{PAGE.name} shows no {language} block after {after!r}"
    return shown(found.group(1))


def test_the_page_s_example_test_is_the_host_s_test() -> None:
    example = page_block("python", "A test in the shop's own pytest-django suite:")
    assert example == (SUITE / "test_order_follow_up.py").read_text()


def test_the_page_s_workflow_is_the_host_s_definition_file() -> None:
    shown_definition = page_block("json", "`shop/workflows/order-follow-up.json`:")
    kept = (HOST / "shop" / "workflows" / "order-follow-up.json").read_text()
    assert json.loads(shown_definition) == json.loads(kept)


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
