"""The how-to on timeouts, tags and trigger rules includes its definitions from
docs/examples/workflows/ (tests/docs/test_examples.py runs each to its end), and its
trigger-rule example shows each of the rules the page explains."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "how-to" / "timeouts-tags-trigger-rules.md"
INCLUDED = re.findall(r'^--8<-- "(docs/examples/workflows/[^"]+\.json)"$', PAGE.read_text(), re.M)


def test_the_page_includes_its_definitions() -> None:
    assert sorted(INCLUDED) == [
        "docs/examples/workflows/order-with-deadline.json",
        "docs/examples/workflows/trigger-rules.json",
    ]


def test_the_rules_example_shows_each_new_rule() -> None:
    raw = json.loads((ROOT / "docs/examples/workflows/trigger-rules.json").read_text())
    rules = {node.get("trigger_rule") for node in raw["nodes"]}
    assert {"one_done", "all_skipped", "all_done_min_one_success", "always"} <= rules
