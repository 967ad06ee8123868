"""What a run under CI (the environment variable CI set, as .ci/run sets it) demands of
the tests: every test runs there, so a missing tool fails instead of skipping."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

IN_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def missing(what: str) -> NoReturn:
    """A test cannot run without `what` (say how to get it): a failure under CI, where a
    skipped test would pass unseen, and a skip on a developer's machine."""
    if IN_CI:
        pytest.fail(f"{what} (CI runs every test: a missing tool is a failure there)")
    pytest.skip(what)
