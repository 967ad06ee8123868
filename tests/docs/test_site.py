"""The site builds strictly from mkdocs.yml, holds every page of its nav, and needs
nothing from outside itself: no web font, stylesheet or script from another host."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.docs.site import ROOT, Built, build_once

#: A resource the browser would fetch from another host (an <a href> to one is a link).
EXTERNAL_RESOURCE = re.compile(
    r"<(?:script|img|iframe)\b[^>]*\bsrc=[\"'](?:https?:)?//"
    r"|<link\b[^>]*\bhref=[\"'](?:https?:)?//"
    r"|@import\s+url\([\"']?(?:https?:)?//",
    re.IGNORECASE,
)


@pytest.fixture(scope="module")
def built() -> Built:
    return build_once()


class _Loader(yaml.SafeLoader):
    """mkdocs.yml may hold `!!python/name:` tags (mkdocs' own loader knows them)."""


_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


def nav_pages() -> list[str]:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=_Loader)

    def walk(item: object) -> list[str]:
        if isinstance(item, str):
            return [item]
        if isinstance(item, dict):
            return [page for value in item.values() for page in walk(value)]
        if isinstance(item, list):
            return [page for value in item for page in walk(value)]
        return []

    return walk(config["nav"])


def test_the_strict_build_reports_no_warning(built: Built) -> None:
    assert "WARNING" not in built.log, built.log


def test_every_page_of_the_nav_is_built(built: Built) -> None:
    pages = nav_pages()
    assert "reference/dsl.md" in pages, pages
    assert "index.md" in pages, pages
    missing = [p for p in pages if not (built.site / p.replace(".md", ".html")).exists()]
    assert missing == [], missing


def test_the_reference_pages_hold_what_they_are_generated_from(built: Built) -> None:
    reference = built.site / "reference"
    assert "WORKFLOW_SWEEP_INTERVAL" in (reference / "settings.html").read_text()
    dsl = (reference / "dsl.html").read_text()
    assert 'id="httpnode"' in dsl
    assert "none_failed_min_one_success" in dsl
    assert "replay_execution" in (reference / "commands.html").read_text()
    assert "task_retry_scheduled" in (reference / "events-statuses.html").read_text()
    # mkdocstrings rendered the docstrings of the Python API.
    python_api = (reference / "python-api.html").read_text()
    assert 'id="workflows.api.start"' in python_api
    assert 'id="workflows.testing.run"' in python_api


def test_redoc_and_the_document_are_in_the_site(built: Built) -> None:
    assert (built.site / "assets/redoc/redoc.standalone.js").stat().st_size > 100_000
    script = (built.site / "reference/openapi.js").read_text()
    assert script.startswith("window.OPENAPI_DOCUMENT = {")
    assert '"/executions"' in script


def test_nothing_is_fetched_from_another_host(built: Built) -> None:
    found = []
    for path in sorted(built.site.rglob("*")):
        if path.suffix in (".html", ".css"):
            for match in EXTERNAL_RESOURCE.finditer(path.read_text(errors="replace")):
                found.append(f"{path.relative_to(built.site)}: {match[0]}")
    assert found == [], "\n".join(found)


def test_every_page_forbids_the_browser_other_hosts(built: Built) -> None:
    """Redoc would show its maker's logo from a CDN: the policy refuses it (the browser
    test sees it refused, not fetched)."""
    pages = sorted(built.site.rglob("*.html"))
    lacking = [
        str(page.relative_to(built.site))
        for page in pages
        if "Content-Security-Policy\" content=\"default-src 'self'" not in page.read_text()
    ]
    assert pages
    assert lacking == []


def test_the_check_sees_an_external_resource() -> None:
    assert EXTERNAL_RESOURCE.search('<link rel="stylesheet" href="https://fonts.example/x">')
    assert EXTERNAL_RESOURCE.search('<script src="//cdn.example/redoc.js">')
    assert not EXTERNAL_RESOURCE.search('<a href="https://github.com/x">source</a>')
    assert not EXTERNAL_RESOURCE.search('<script src="../assets/redoc/redoc.standalone.js">')


def test_a_missing_snippet_fails_the_build(tmp_path: Path) -> None:
    """pymdownx.snippets with check_paths: an include of a file that is not there fails
    the strict build rather than leaving the page without its example."""
    build_once()  # skips (or fails under CI) as the others do without mkdocs
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text('# Page\n\n--8<-- "docs/examples/no/such/file.json"\n')
    config = (ROOT / "mkdocs.yml").read_text()
    config = re.sub(r"(?ms)^nav:.*", "nav:\n  - index.md\n", config)
    config = config.replace("docs_dir: docs", f"docs_dir: {docs}")
    config = config.replace("scripts/docs_site_hooks.py", str(ROOT / "scripts/docs_site_hooks.py"))
    (tmp_path / "mkdocs.yml").write_text(config)
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(tmp_path / "mkdocs.yml"),
         "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert "docs/examples/no/such/file.json" in done.stdout + done.stderr
