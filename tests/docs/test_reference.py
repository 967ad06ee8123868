"""docs/reference/ is what the code generates (scripts/docs_reference): a setting, field,
command, endpoint or event added or changed without its page regenerated fails here, and
one without a description fails the generator itself."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from enum import StrEnum
from pathlib import Path

import pytest

from scripts.docs_reference import commands_page, dsl_page, events_page
from scripts.docs_reference import settings_page as settings_module
from scripts.docs_reference.markdown import Undocumented, comment_docs
from scripts.docs_reference.pages import GENERATORS, stale
from workflows.conf import SETTINGS, Setting

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference"
HINT = "run ./dev docs --regenerate (python -m scripts.docs_reference --write) and commit it"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pages as the generator writes them now, in a process of their own (the
    standalone settings, not this suite's)."""
    out = tmp_path_factory.mktemp("reference")
    done = subprocess.run(
        [sys.executable, "-m", "scripts.docs_reference", "--output", str(out)],
        cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"the generator failed:\n{done.stdout}\n{done.stderr}"
    return out


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_the_committed_page_is_what_the_code_generates(generated: Path, name: str) -> None:
    committed = REFERENCE / name
    assert committed.exists(), f"docs/reference/{name} is missing: {HINT}"
    assert committed.read_text() == (generated / name).read_text(), (
        f"docs/reference/{name} differs from what the code generates: {HINT}"
    )


def test_every_setting_is_on_the_settings_page() -> None:
    page = (REFERENCE / "settings.md").read_text()
    assert [name for name in SETTINGS if f"`WORKFLOW_{name}`" not in page] == []


def test_a_setting_without_a_description_fails_the_generator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(SETTINGS, "SOMETHING_NEW", Setting(1, int, "  "))
    with pytest.raises(Undocumented, match="WORKFLOW_SOMETHING_NEW has no description"):
        settings_module.render()


def test_the_standalone_settings_read_only_described_variables() -> None:
    read = settings_module.variables_read(settings_module.STANDALONE_SETTINGS.read_text())
    assert {"DATABASE_URL", "SECRET_KEY", "WORKFLOW_LOG_FORMAT", "LOG_LEVEL"} <= read, read
    assert settings_module.variables_read(
        'import os\nA = os.environ.get("ONE", "1")\nB = _flag("TWO")\nC = os.environ["THREE"]\n'
    ) == {"ONE", "TWO", "THREE"}


def test_a_variable_read_without_a_description_fails_the_generator(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    standalone = tmp_path / "settings.py"
    standalone.write_text('import os\nX = os.environ.get("SOMETHING_NEW", "")\n')
    monkeypatch.setattr(settings_module, "STANDALONE_SETTINGS", standalone)
    with pytest.raises(Undocumented, match=r"reads \['SOMETHING_NEW'\], which config/environment"):
        settings_module.render()


def test_a_field_without_a_description_fails_the_generator() -> None:
    assert dsl_page.meaning("url", {"description": "Where."}, "HttpNode") == "Where."
    with pytest.raises(Undocumented, match="HttpNode: field 'shiny' has no description"):
        dsl_page.meaning("shiny", {"type": "string"}, "HttpNode")


def test_a_trigger_rule_or_template_root_without_a_meaning_fails_the_generator() -> None:
    with pytest.raises(Undocumented, match=r"trigger rules \['sometimes'\]"):
        dsl_page._listed(
            dsl_page.TRIGGER_RULE_MEANINGS, ("all_success", "sometimes"), "trigger rules"
        )


class Colour(StrEnum):
    #: Described here.
    RED = "red"
    GREEN = "green"


def test_a_status_or_event_without_a_meaning_fails_the_generator() -> None:
    assert comment_docs(Colour) == {"RED": "Described here."}
    with pytest.raises(Undocumented, match=r"Colour.GREEN has no meaning.*tests/docs/"):
        events_page.members(Colour)


def test_a_command_argument_without_help_fails_the_generator() -> None:
    parser = argparse.ArgumentParser()
    action = parser.add_argument("--quiet", action="store_true")
    with pytest.raises(Undocumented, match="purge's argument --quiet has no help"):
        commands_page._argument("purge", action)


def test_the_check_names_each_stale_or_missing_file(tmp_path: Path) -> None:
    (tmp_path / "settings.md").write_text("old\n")
    problems = stale({"settings.md": "new\n", "dsl.md": "x\n"}, tmp_path)
    assert problems[0].startswith("docs/reference/settings.md: differs"), problems
    assert "-old" in problems[0]
    assert "+new" in problems[0]
    assert problems[1] == "docs/reference/dsl.md: missing"
