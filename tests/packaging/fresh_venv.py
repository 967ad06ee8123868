"""The built wheel in a fresh virtualenv outside the repository, as a user installs it.

pip installs it at the locked versions (it may take them from its cache; only package
registries are reachable). Its processes get an environment with nothing of the
repository importable and none of the test run's own settings.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.packaging.context import ROOT

#: What a child keeps of the test run's environment: nothing that configures the engine.
KEPT = ("HOME", "LANG", "LC_ALL", "TMPDIR", "PIP_CONSTRAINT")


def install(wheel: Path, base: Path, *also: str) -> Path:
    """A virtualenv at base/venv holding `wheel` (and the requirements `also` names)."""
    assert ROOT not in base.parents, f"{base} is inside the repository"
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = [str(venv / "bin/python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    done = subprocess.run(
        [*pip, "--constraint", str(ROOT / "requirements.lock"), str(wheel), *also],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"pip install of the wheel failed:\n{done.stdout}\n{done.stderr}"
    return venv


def environment(venv: Path, **settings: str) -> dict[str, str]:
    """The children's environment: the venv's programs first on PATH, output unbuffered
    (logs are read while a child runs), and `settings`."""
    env = {key: os.environ[key] for key in KEPT if key in os.environ}
    env.update(PATH=f"{venv / 'bin'}:/usr/bin:/bin", PYTHONUNBUFFERED="1", **settings)
    return env


@dataclass
class Installed:
    venv: Path
    workdir: Path
    env: dict[str, str]

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    def run(self, *argv: str, extra: dict[str, str] | None = None, timeout: float = 300) -> str:
        """`argv` in the work directory; its stdout and stderr, or AssertionError showing
        them when it exits non-zero."""
        done = subprocess.run(
            list(argv), cwd=self.workdir, env={**self.env, **(extra or {})},
            capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
        assert done.returncode == 0, f"{' '.join(argv)}:\n{done.stdout}\n{done.stderr}"
        return done.stdout + done.stderr
