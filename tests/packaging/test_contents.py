"""The engine is three apps: the wheel holds exactly them, every file of each (templates,
static files, JSON), and nothing else; the Docker build context holds them and the
standalone project (config/, manage.py) the image runs them with; what must stay out of
the image stays out."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from django.conf import settings

from tests.packaging.context import ROOT, in_build_context, tracked_files, wheel_files

#: The engine's apps: the distribution's only top-level packages.
ENGINE = ("executions", "nodes", "workflows")
#: The standalone project: settings, URLconf, Celery app, WSGI (and its demo). Not shipped.
STANDALONE = "config"


def own_packages() -> list[str]:
    """The repository's own top-level packages the settings load: the apps of
    INSTALLED_APPS that live here, and the package of the URLconf and WSGI application."""
    # The tests' own app (tests.ledger) is the test settings', never a shipped one.
    names = {app.split(".")[0] for app in settings.INSTALLED_APPS} - {"tests"}
    names |= {settings.ROOT_URLCONF.split(".")[0], settings.WSGI_APPLICATION.split(".")[0]}
    own = []
    for name in sorted(names):
        spec = importlib.util.find_spec(name)
        # The repository's own folder of that name (not a virtualenv's inside the checkout).
        if spec and spec.origin and ROOT / name in Path(spec.origin).parents:
            own.append(name)
    return own


def package_files(packages: tuple[str, ...] | list[str]) -> dict[str, list[str]]:
    """Each package's files (no byte code), as the repository has them."""
    files = tracked_files()
    return {
        package: [p for p in files if p.startswith(f"{package}/") and "__pycache__" not in p]
        for package in packages
    }


def top_level_packages(names: set[str]) -> set[str]:
    """The top-level packages among a wheel's paths (its .dist-info is metadata)."""
    return {path.split("/")[0] for path in names if "/" in path and ".dist-info/" not in path} | {
        path.removesuffix(".py") for path in names if "/" not in path and path.endswith(".py")
    }


def test_the_settings_load_the_three_apps_and_the_standalone_project() -> None:
    assert set(own_packages()) == {*ENGINE, STANDALONE}


def test_the_build_context_holds_every_app_the_standalone_project_and_their_files() -> None:
    files = package_files([*ENGINE, STANDALONE])
    missing = [p for listed in files.values() for p in listed if not in_build_context(p)]
    assert missing == [], f".dockerignore keeps these out of the image: {missing}"
    for needed in ("pyproject.toml", "requirements.lock", "README.md", "LICENSE", "manage.py"):
        assert in_build_context(needed), f"the Dockerfile needs {needed}"


def test_the_build_context_leaves_out_local_state_secrets_and_tests() -> None:
    for path in (
        ".git/HEAD", ".venv/bin/python", ".venv-lowest/bin/python", "var/workflow.sqlite3",
        "var/static/admin/x.css", ".env", ".env.production", "tests/conftest.py",
        "executions/__pycache__/models.pyc", "build/lib/workflows/models.py",
        "django_replayable_workflows.egg-info/PKG-INFO",
    ):  # fmt: skip
        assert not in_build_context(path), f"{path} would be sent to the Docker build"


def test_the_wheel_holds_exactly_the_three_apps_with_every_file(wheel: Path) -> None:
    inside = wheel_files(wheel)
    assert top_level_packages(inside) == set(ENGINE), sorted(top_level_packages(inside))
    missing = [p for listed in package_files(ENGINE).values() for p in listed if p not in inside]
    assert missing == [], f"not in {wheel.name} (pyproject.toml's package-data?): {missing}"
    assert "workflows/templates/workflows/redoc.html" in inside
    assert not [p for p in inside if p.startswith(f"{STANDALONE}/")]
