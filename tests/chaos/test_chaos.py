"""The small chaos run as a test. Marked `chaos`, so `./dev test` (-m "not chaos") leaves it
out; CI runs the same thing as `./dev chaos small`. Run it with `pytest -m chaos`."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.chaos.cluster import ROOT


@pytest.mark.chaos
@pytest.mark.timeout(1800)
def test_small_chaos_run_keeps_every_promise() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tests.chaos.run", "small"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1700,
        check=False,
    )
    assert result.returncode == 0, f"{result.stdout[-6000:]}\n{result.stderr[-6000:]}"
    assert "chaos small: PASSED" in result.stdout
