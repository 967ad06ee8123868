"""Every app the settings install, with every file it holds (templates, static files, JSON
such as nodes/demo_workflow.json), is in the Docker build context and in the wheel the
image installs; and what must stay out of the image stays out."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from django.conf import settings

from tests.packaging.context import ROOT, in_build_context, tracked_files, wheel_files


def shipped_packages() -> list[str]:
    """The repository's own top-level packages the settings load: the apps of
    INSTALLED_APPS that live here, and the package of the URLconf and WSGI application."""
    names = {app.split(".")[0] for app in settings.INSTALLED_APPS}
    names |= {settings.ROOT_URLCONF.split(".")[0], settings.WSGI_APPLICATION.split(".")[0]}
    own = []
    for name in sorted(names):
        spec = importlib.util.find_spec(name)
        if spec and spec.origin and ROOT in Path(spec.origin).parents:
            own.append(name)
    return own


def package_files() -> dict[str, list[str]]:
    """Each shipped package's files (no byte code), as the repository has them."""
    files = tracked_files()
    return {
        package: [p for p in files if p.startswith(f"{package}/") and "__pycache__" not in p]
        for package in shipped_packages()
    }


def test_every_installed_app_of_the_repository_is_shipped() -> None:
    assert {"config", "workflows", "executions", "nodes", "schedules", "monitoring"} <= set(
        shipped_packages()
    )


def test_the_build_context_holds_every_app_and_its_files() -> None:
    missing = [p for files in package_files().values() for p in files if not in_build_context(p)]
    assert missing == [], f".dockerignore keeps these out of the image: {missing}"
    for needed in ("pyproject.toml", "requirements.lock", "README.md", "LICENSE", "manage.py"):
        assert in_build_context(needed), f"the Dockerfile needs {needed}"


def test_the_build_context_leaves_out_local_state_secrets_and_tests() -> None:
    for path in (
        ".git/HEAD", ".venv/bin/python", "var/workflow.sqlite3", "var/static/admin/x.css",
        ".env", ".env.production", "tests/conftest.py", "executions/__pycache__/models.pyc",
        "build/lib/config/settings.py", "django_workflow_engine.egg-info/PKG-INFO",
    ):  # fmt: skip
        assert not in_build_context(path), f"{path} would be sent to the Docker build"


def test_the_wheel_holds_every_app_and_its_files(wheel: Path) -> None:
    inside = wheel_files(wheel)
    missing = [p for files in package_files().values() for p in files if p not in inside]
    assert missing == [], f"not in {wheel.name} (pyproject.toml's package-data?): {missing}"
    assert "nodes/demo_workflow.json" in inside
    assert not [p for p in inside if p.startswith(("tests/", "bench/", "scripts/"))]
