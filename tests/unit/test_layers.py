"""Imports go one way inside an app, read from the source: every import counts (a
function's lazy ones and TYPE_CHECKING ones too), so no rule can be dodged by moving an
import into a function.

The executions app is layered, top to bottom:

    entry     Celery tasks, the worker, views and URLs, the console, the admin,
              management commands, migrations, what the host's processes load
    services  the use cases (start, cancel, sweep, ...), metrics, integrity
    kernel    everything done under an execution's lock (executions/kernel/)
    messages  the Celery messages and the engine's Django signals
    models    models, definitions, selectors, and the plain helpers beside them
    engine    the pure core (executions/engine/: no Django, test_engine__purity.py)

A module may import its own layer and the layers below it, never one above. Every module
of the app has a layer (the table below, the longest prefix that matches): a new module
that fits none fails until it is placed. Inside every app, no modules import each other in
a circle, whatever their layers.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.unit.test_app_boundaries import APPS, ROOT, module_name, source_of

LAYERS = ("engine", "models", "messages", "kernel", "services", "entry")

#: Module (or package) -> layer, for the executions app; the longest matching prefix wins.
EXECUTIONS = {
    "executions": "models",  # the app's package itself (empty)
    "executions.engine": "engine",
    # Models, definitions, selectors and the helpers that read or hold them.
    "executions.models": "models",
    "executions.definitions": "models",
    "executions.selectors": "models",
    "executions.filters": "models",
    "executions.tags": "models",
    "executions.liveness": "models",
    "executions.longpoll": "models",
    "executions.history_file": "models",
    "executions.metrics.models": "models",
    "executions.schedules": "models",
    "executions.schedules.models": "models",
    "executions.schedules.selectors": "models",
    "executions.schedules.cron": "models",
    "executions.schedules.policy": "models",
    "executions.triggers": "models",
    "executions.triggers.models": "models",
    "executions.rates": "models",
    "executions.rates.models": "models",
    # Retention: tombstones and the choice of what a purge takes.
    "executions.retention": "models",
    # What wakes workers and host code up.
    "executions.messages": "messages",
    "executions.signals": "messages",
    "executions.broker": "messages",
    "executions.kernel": "kernel",
    "executions.services": "services",
    "executions.integrity": "services",
    "executions.metrics": "services",
    "executions.schedules.services": "services",
    "executions.schedules.backfill": "services",
    "executions.triggers.services": "services",
    "executions.retention.archive": "services",
    # Entry points: what a process, a request or an operator calls.
    "executions.apps": "entry",
    "executions.admin": "entry",
    "executions.beat": "entry",
    "executions.console": "entry",
    "executions.control_views": "entry",
    "executions.management": "entry",
    "executions.migrations": "entry",
    "executions.pool_views": "entry",
    "executions.serializers": "entry",
    "executions.supervisor": "entry",
    "executions.tasks": "entry",
    "executions.urls": "entry",
    "executions.views": "entry",
    "executions.worker": "entry",
    "executions.metrics.probe": "entry",
    "executions.metrics.urls": "entry",
    "executions.metrics.views": "entry",
    "executions.schedules.admin": "entry",
    "executions.schedules.admin_backfill": "entry",
    "executions.schedules.serializers": "entry",
    "executions.schedules.tasks": "entry",
    "executions.schedules.urls": "entry",
    "executions.schedules.views": "entry",
    "executions.triggers.admin": "entry",
    "executions.triggers.serializers": "entry",
    "executions.triggers.urls": "entry",
    "executions.triggers.views": "entry",
    "executions.retention.admin": "entry",
    "executions.retention.tasks": "entry",
}


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    path: Path
    line: int
    target: str  # the module imported (a package's submodule where one is named)

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}: {self.module} imports {self.target}"


def sources() -> dict[str, Path]:
    """Every module of the apps, migrations included."""
    return {module_name(path): path for app in APPS for path in (ROOT / app).rglob("*.py")}


def imports(module: str, path: Path, known: set[str]) -> Iterator[Import]:
    """Each import of `module`, anywhere in it, resolved to the modules of the apps it
    names (`from executions.kernel import inbox` imports executions.kernel.inbox)."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            package = source_of(node, module, is_package)
            targets = [
                f"{package}.{alias.name}" if f"{package}.{alias.name}" in known else package
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in known:  # a name inside a module: that module
                target = target.rpartition(".")[0]
            if target and target != module:
                yield Import(module, path, node.lineno, target)


def all_imports() -> list[Import]:
    found = sources()
    known = set(found)
    return [imp for module, path in sorted(found.items()) for imp in imports(module, path, known)]


def layer_of(module: str) -> str | None:
    matches = [p for p in EXECUTIONS if module == p or module.startswith(p + ".")]
    return EXECUTIONS[max(matches, key=len)] if matches else None


def app_of(module: str) -> str:
    return module.split(".")[0]


def test_every_module_of_executions_has_a_layer() -> None:
    unplaced = sorted(m for m in sources() if app_of(m) == "executions" and layer_of(m) is None)
    assert not unplaced, "modules with no layer (add each to EXECUTIONS): " + ", ".join(unplaced)


def upward(found: list[Import]) -> list[str]:
    """Every import of executions that goes up a layer, described."""
    problems = []
    for imp in found:
        if app_of(imp.module) != "executions" or app_of(imp.target) != "executions":
            continue
        source, target = layer_of(imp.module), layer_of(imp.target)
        if source is None or target is None:
            continue  # test_every_module_of_executions_has_a_layer names them
        if LAYERS.index(target) > LAYERS.index(source):
            problems.append(f"{imp} ({source} may not import {target})")
    return problems


def test_imports_go_down_the_layers() -> None:
    problems = upward(all_imports())
    assert not problems, "imports that go up a layer:\n" + "\n".join(problems)


def circles(edges: dict[str, dict[str, Import]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, {})):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return groups


def within_apps(found: list[Import]) -> dict[str, dict[str, Import]]:
    """module -> module of the same app it imports -> the (first) import that does."""
    edges: dict[str, dict[str, Import]] = {}
    for imp in found:
        if app_of(imp.module) == app_of(imp.target):
            edges.setdefault(imp.module, {}).setdefault(imp.target, imp)
    return edges


def test_no_import_circle_inside_an_app() -> None:
    edges = within_apps(all_imports())
    problems = []
    for group in circles(edges):
        members = set(group)
        lines = [
            str(imp)
            for module in group
            for target, imp in sorted(edges[module].items())
            if target in members
        ]
        problems.append(f"{len(group)} modules import each other:\n  " + "\n  ".join(lines))
    assert not problems, "import circles:\n" + "\n".join(problems)


def test_the_checks_see_what_they_are_about() -> None:
    """A circle, an upward import, and the resolution of `from package import module`."""
    here = Path(__file__)
    a = Import("x.a", here, 1, "x.b")
    b = Import("x.b", here, 2, "x.a")
    assert circles(within_apps([a, b])) == [["x.a", "x.b"]]
    assert circles(within_apps([a])) == []
    up = Import("executions.kernel.unit", here, 3, "executions.services.start")
    assert upward([up]) == [f"{up} (kernel may not import services)"], (
        "the kernel importing a service is refused"
    )
    down = Import("executions.services.start", here, 4, "executions.kernel.unit")
    assert upward([down]) == []
    tree = sources()
    found = {
        imp.target
        for imp in imports(
            "executions.services.attempts", tree["executions.services.attempts"], set(tree)
        )
    }
    assert "executions.kernel.inbox" in found
    assert "executions.kernel" not in found
