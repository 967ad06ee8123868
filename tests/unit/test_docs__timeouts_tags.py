"""The how-to on timeouts, tags and trigger rules: every definition it includes parses
and validates, and each one it names is included from docs/examples/workflows/."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nodes.registry import function_exists
from workflows.dsl.parser import parse_definition

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "how-to" / "timeouts-tags-trigger-rules.md"
INCLUDED = re.findall(r'^--8<-- "(docs/examples/workflows/[^"]+\.json)"$', PAGE.read_text(), re.M)


def test_the_page_includes_its_definitions() -> None:
    assert sorted(INCLUDED) == [
        "docs/examples/workflows/nightly-with-child-deadline.json",
        "docs/examples/workflows/order-with-deadline.json",
        "docs/examples/workflows/trigger-rules.json",
    ]


@pytest.mark.parametrize("path", INCLUDED)
def test_each_included_definition_validates(path: str) -> None:
    definition = parse_definition(
        json.loads((ROOT / path).read_text()), function_exists=function_exists
    )
    assert definition.nodes


def test_the_rules_example_shows_each_new_rule() -> None:
    raw = json.loads((ROOT / "docs/examples/workflows/trigger-rules.json").read_text())
    rules = {node.get("trigger_rule") for node in raw["nodes"]}
    assert {"one_done", "all_skipped", "all_done_min_one_success", "always"} <= rules
