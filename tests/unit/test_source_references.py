"""The shipped code, the standalone project, the tests, the benchmarks and the scripts say
what they mean: no comment, docstring or string points at a section of a planning document
or at an issue number (a planning document's name with a section sign, or the word
"issue" with a number), which a reader of the code (or of
/schema, where view docstrings are published) does not have."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("workflows", "executions", "nodes", "config", "tests", "bench", "scripts")
#: This file, whose check of the pattern holds a reference on purpose.
SELF = Path(__file__).resolve()
REFERENCE = re.compile(r"CONTRACT|§|\b[Ii]ssues? #?\d+\b")


def references(text: str) -> list[tuple[int, str]]:
    return [
        (number, line.strip())
        for number, line in enumerate(text.splitlines(), 1)
        if REFERENCE.search(line)
    ]


#: The documentation's pages and the examples they include: a reader of the site has
#: neither the planning documents nor the issues.
DOCS = ROOT / "docs"
DOC_SUFFIXES = (".md", ".py", ".json", ".yml", ".yaml", ".toml")


def sources() -> list[Path]:
    """Every .py file of PACKAGES, manage.py and mkdocs.yml, and every page, example and
    generated reference file of docs/, but this file."""
    paths = [path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))]
    docs = [path for path in sorted(DOCS.rglob("*")) if path.suffix in DOC_SUFFIXES]
    extra = [ROOT / "manage.py", ROOT / "mkdocs.yml", *docs]
    return [path for path in [*paths, *extra] if path.resolve() != SELF]


def test_no_source_file_cites_the_contract_or_an_issue() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line}"
        for path in sources()
        for number, line in references(path.read_text())
    ]
    assert not found, "say what is meant instead:\n" + "\n".join(found)


def test_the_scan_reaches_the_tests_bench_and_scripts_but_not_itself() -> None:
    scanned = {path.relative_to(ROOT).parts[0] for path in sources()}
    assert {"tests", "bench", "scripts", "manage.py", "docs", "mkdocs.yml"} <= scanned, scanned
    assert SELF not in {path.resolve() for path in sources()}


def test_the_check_sees_each_form() -> None:
    # Built from parts, so that this file holds no reference of its own.
    document, issue = "CONTRACT", "issue"
    text = (
        f'"""Pools ({document} \u00a76)."""\n# see {issue} 11 item 5\n'
        f"x = 1  # {issue.title()} #3\nissues = 2\n"
    )
    assert [number for number, _ in references(text)] == [1, 2, 3]
