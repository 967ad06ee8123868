"""No import cycle between the apps, read from the source (every import, a function's
lazy ones and TYPE_CHECKING ones included, so a cycle cannot hide in a local import).

The units are the Django apps, except the pure core (executions.engine; workflows.dsl with
the node kinds of workflows.kinds, one vocabulary): they import no Django
(test_engine__purity.py) and are libraries every app may use, so they count as units of
their own, as does workflows.conf (the engine's settings, which every app reads).
workflows.api (the Python API) and workflows.urls (every route, for the host's URLconf) are
entry points, like views: units of their own that may use every app and that no app
imports. The direction, pinned below: executions uses workflows and nodes (the worker
runtime runs the executors), nodes uses neither executions nor the workflows app. No module
of the three imports `config`, the standalone project that is no part of them.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ("executions", "nodes", "workflows")
#: The standalone project (settings, URLconf, Celery app): it uses the apps, never the reverse.
STANDALONE = "config"
#: Packages inside an app that are units of their own, and the unit each belongs to.
CORE = {
    "executions.engine": "executions.engine",
    "workflows.dsl": "workflows.dsl",
    "workflows.kinds": "workflows.dsl",
    # The engine's settings (Django's settings and their defaults): every app reads them,
    # the executors too, and they import no app.
    "workflows.conf": "workflows.conf",
    # The one wall clock (a shifted one under workflows.testing): every app reads the time
    # through it, the executors and the definitions' parser too, and it imports nothing.
    "workflows.clock": "workflows.clock",
    # Entry points of the workflows app for the host's code: the Python API (which starts
    # executions), the AppConfig that loads it, and the URLconf of every route. They may
    # use every app; nothing of an app may import them.
    "workflows.api": "entry",
    "workflows.apps": "entry",
    "workflows.urls": "entry",
    # The testing harness runs the whole engine in the test's process: an entry point too.
    "workflows.testing": "entry",
}


def unit_of(module: str) -> str | None:
    for package, unit in CORE.items():
        if module == package or module.startswith(package + "."):
            return unit
    top = module.split(".")[0]
    return top if top in APPS else None


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_of(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The module a `from ... import` reads from, a relative one resolved."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base[: len(base) - node.level + (1 if is_package else 0)]
    return ".".join([*base, node.module] if node.module else base)


def imported(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = source_of(node, module, is_package)
            names.add(target)
            # `from executions import store` imports executions.store
            names.update(f"{target}.{alias.name}" for alias in node.names)
    return names


def app_modules() -> dict[str, set[str]]:
    """Every module of the apps (migrations too) -> what it imports."""
    found = {}
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            module = module_name(path)
            tree = ast.parse(path.read_text(), str(path))
            found[module] = imported(tree, module, path.name == "__init__.py")
    return found


def dependencies() -> dict[str, dict[str, set[str]]]:
    """unit -> unit it imports -> the modules that do (to name them in a failure)."""
    graph: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for module, names in app_modules().items():
        if ".migrations." in module:
            continue
        source = unit_of(module)
        for name in names:
            target = unit_of(name)
            if target is not None and source is not None and target != source:
                graph[source][target].add(module)
    return graph


def cycles(graph: dict[str, dict[str, set[str]]]) -> list[list[str]]:
    """Every simple cycle's units, found by a depth-first walk (the graph has a handful of
    nodes)."""
    found: list[list[str]] = []

    def walk(path: list[str]) -> None:
        for nxt in sorted(graph.get(path[-1], {})):
            if nxt == path[0]:
                found.append([*path, nxt])
            elif nxt not in path and nxt > path[0]:
                walk([*path, nxt])

    for start in sorted(graph):
        walk([start])
    return found


def describe(graph: dict[str, dict[str, set[str]]], cycle: list[str]) -> str:
    steps = []
    for a, b in pairwise(cycle):
        steps.append(f"{a} -> {b} (in {', '.join(sorted(graph[a][b]))})")
    return "; ".join(steps)


def test_no_import_cycle_between_apps() -> None:
    graph = dependencies()
    problems = [describe(graph, cycle) for cycle in cycles(graph)]
    assert not problems, "import cycles between apps:\n" + "\n".join(problems)


def test_nodes_imports_no_other_app() -> None:
    """The executors are plain code over the pure core: the runtime that drives them
    (executions/worker/) depends on them, never the reverse."""
    graph = dependencies()
    assert not graph["nodes"].get("executions"), graph["nodes"]["executions"]
    assert not graph["nodes"].get("workflows"), graph["nodes"]["workflows"]


def test_no_app_imports_the_standalone_project() -> None:
    """The apps run in any Django project: `config` is the name of this repository's
    own (and of many a host's settings package), so no module of theirs may import it."""
    importers = sorted(
        module
        for module, names in app_modules().items()
        if any(name == STANDALONE or name.startswith(f"{STANDALONE}.") for name in names)
    )
    assert importers == []


def test_the_settings_import_no_app() -> None:
    """Every app reads its settings through workflows.conf: it may use the pure core only."""
    graph = dependencies()
    assert set(graph["workflows.conf"]) <= {"workflows.dsl"}, graph["workflows.conf"]


def test_nothing_imports_the_entry_points() -> None:
    graph = dependencies()
    importers = {unit: sorted(deps["entry"]) for unit, deps in graph.items() if "entry" in deps}
    assert not importers, importers


def test_every_app_is_checked() -> None:
    """A Django app added to the repository (a package with an apps.py) joins APPS, so
    no app's imports go unchecked."""
    found = {path.parent.name for path in ROOT.glob("*/apps.py")}
    assert found == set(APPS), f"apps in the repository: {sorted(found)}; checked: {APPS}"


def test_every_package_of_the_apps_is_a_regular_one() -> None:
    """A folder of modules without __init__.py is a namespace package, which the wheel's
    package finder (pyproject.toml) leaves out: an installed engine would lack it."""
    folders = {path.parent for app in APPS for path in (ROOT / app).rglob("*.py")}
    missing = sorted(str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").exists())
    assert not missing, f"folders of modules with no __init__.py: {missing}"


def test_the_check_sees_a_cycle() -> None:
    graph = {"a": {"b": {"a.x"}}, "b": {"c": {"b.y"}}, "c": {"a": {"c.z"}}}
    assert cycles(graph) == [["a", "b", "c", "a"]]
    assert not cycles({"a": {"b": {"a.x"}}, "b": {}})


#: The services and what they write with: plain code that every caller (a view, the admin,
#: a task, a script, the worker) runs alike, so none of it may lean on the REST layer.
SERVICES = (
    "executions.services",
    "executions.kernel",
    "executions.worker",
)
REST_LAYER = ("rest_framework", "workflows.rest")


def within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == package or module.startswith(f"{package}.") for package in packages)


def test_services_import_no_rest_layer() -> None:
    """A refusal's HTTP status travels on the exception (workflows.refusals), so a service
    needs neither DRF nor the API's modules."""
    modules = {m: names for m, names in app_modules().items() if within(m, SERVICES)}
    assert all(any(within(m, (p,)) for m in modules) for p in SERVICES), sorted(modules)
    offenders = {
        module: sorted(name for name in names if within(name, REST_LAYER))
        for module, names in modules.items()
    }
    assert not {m: found for m, found in offenders.items() if found}
