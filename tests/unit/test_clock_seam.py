"""The engine reads the wall clock in one place, workflows/clock.py: no module of the three
apps calls timezone.now(), time.time(), datetime.now() and the like itself, so the testing
harness's shifted clock (workflows.testing) is the time of everything the engine records,
compares and schedules. Durations measured with time.monotonic() are not wall-clock reads.
Nor is the database's clock used (NOW() in SQL, Django's Now()): leases, claims and timers
are stamped with this clock's time, passed as parameters.

Read from the source (the syntax tree, so a mention in a comment or a docstring is no
read), as tests/unit/test_source_references.py reads it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ("executions", "nodes", "workflows")
SEAM = Path("workflows/clock.py")

#: module alias -> the attributes of it that read the wall clock.
READS = {
    "timezone": {"now", "localtime", "localdate"},
    "time": {"time", "time_ns"},
    "datetime": {"now", "utcnow", "today"},
    "date": {"today"},
}
#: What may be imported by name (`from time import time`) only to be called bare.
FROM_IMPORTS = {
    "time": {"time", "time_ns"},
    "django.utils.timezone": {"now", "localtime", "localdate"},
}
#: Model fields stamped by Django's own clock when their row is saved.
STAMPING_KEYWORDS = {"auto_now", "auto_now_add"}
#: The database's own clock, in raw SQL or as Django's Now(): never used, so that leases,
#: claims and timers are all stamped by the one clock the harness shifts.
DATABASE_CLOCK = re.compile(
    r"\b(now|clock_timestamp|statement_timestamp|transaction_timestamp)\s*\(\s*\)"
    r"|\bcurrent_timestamp\b|\blocaltimestamp\b|datetime\(\s*'now'",
    re.IGNORECASE,
)

#: (file, what it reads) -> why the real clock is right there.
ALLOWED = {
    ("executions/supervisor.py", "datetime.now"): (
        "stamps the output lines of the worker and beat processes it runs for the demo and "
        "the integration tests: real processes, real time"
    ),
    ("executions/supervisor.py", "time.time"): "when it started one of those processes",
    ("executions/metrics/probe.py", "time.time"): (
        "compares with the beat's heartbeat file's st_mtime, which the filesystem stamps "
        "with the real clock"
    ),
    ("nodes/executors/http.py", "time.time"): (
        "turns a server's Retry-After date, written by the server's real clock, into a "
        "number of seconds to wait, which the engine then waits on its own clock"
    ),
    ("workflows/models.py", "auto_now_add"): (
        "when an author made a workflow or a version: bookkeeping the engine never compares"
    ),
    ("executions/schedules/models.py", "auto_now_add"): (
        "when a schedule or a fire's row was written: bookkeeping; a fire's time is its "
        "fire_time, from the clock"
    ),
    ("executions/schedules/models.py", "auto_now"): "when a schedule was last edited",
    ("executions/triggers/models.py", "auto_now_add"): (
        "when a trigger or a published event was made: bookkeeping the engine never compares"
    ),
}


def reads(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) for every wall-clock read in the tree."""
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.attr in READS.get(node.value.id, set())
        ):
            found.append((node.lineno, f"{node.value.id}.{node.attr}"))
        elif isinstance(node, ast.ImportFrom) and node.module in FROM_IMPORTS:
            for alias in node.names:
                if alias.name in FROM_IMPORTS[node.module]:
                    found.append((node.lineno, f"from {node.module} import {alias.name}"))
        elif isinstance(node, ast.Name) and node.id == "Now":
            found.append((node.lineno, "Now()"))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and DATABASE_CLOCK.search(node.value)
            and not _docstring(node)
        ):
            found.append((node.lineno, "the database's clock in SQL"))
        elif (
            isinstance(node, ast.keyword)
            and node.arg in STAMPING_KEYWORDS
            and isinstance(node.value, ast.Constant)
            and node.value.value is True
        ):
            found.append((node.lineno, node.arg))
    return found


def _docstring(node: ast.Constant) -> bool:
    """A string standing alone as a statement (a docstring) may name now() in prose."""
    return getattr(node, "_is_doc", False)


def mark_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            node.value._is_doc = True  # type: ignore[attr-defined]
    return tree


def sources() -> list[Path]:
    """Every module of the apps but the seam and the migrations (which record history)."""
    return [
        path
        for app in APPS
        for path in sorted((ROOT / app).rglob("*.py"))
        if path.relative_to(ROOT) != SEAM and "migrations" not in path.parts
    ]


def test_the_apps_read_the_wall_clock_only_through_the_seam() -> None:
    found, allowed_seen = [], set()
    for path in sources():
        relative = path.relative_to(ROOT).as_posix()
        for line, what in reads(mark_docstrings(ast.parse(path.read_text(), str(path)))):
            if (relative, what) in ALLOWED:
                allowed_seen.add((relative, what))
            else:
                found.append(f"{relative}:{line}: {what}")
    assert not found, "read the time with workflows.clock.now():\n" + "\n".join(found)
    # An exception whose read is gone is dropped from the list, so it cannot hide a new one.
    assert allowed_seen == set(ALLOWED), sorted(set(ALLOWED) - allowed_seen)


def test_the_seam_imports_nothing_of_the_engine_nor_django() -> None:
    tree = ast.parse((ROOT / SEAM).read_text())
    imported = {
        name.split(".")[0]
        for node in ast.walk(tree)
        for name in (
            [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else []
        )
    }
    assert imported <= {"__future__", "threading", "collections", "contextlib", "datetime"}, (
        imported
    )


def test_the_check_sees_each_form() -> None:
    text = (
        "import time\nfrom django.utils import timezone\nfrom time import time as t\n"
        "a = timezone.now()\nb = time.time()\nc = datetime.now(UTC)\nd = date.today()\n"
        "e = models.DateTimeField(auto_now_add=True)\nf = time.monotonic()\n"
        '"""timezone.now() in a docstring is no read"""\n'
        'g = Attempt.objects.update(at=Now())\nh = "UPDATE t SET at = NOW() WHERE x"\n'
    )
    found = reads(mark_docstrings(ast.parse(text)))
    assert sorted(line for line, _ in found) == [3, 4, 5, 6, 7, 8, 11, 12]
