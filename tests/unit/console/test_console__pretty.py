"""Payloads as escaped, indented HTML with long values folded."""

from __future__ import annotations

from executions.console.pretty import LONG_STRING, MOST, pretty


def test_short_values_stay_on_one_line_and_are_escaped() -> None:
    assert pretty({"a": 1, "b": [True, None]}) == '{"a": 1, "b": [true, null]}'
    assert pretty("<script>") == '"&lt;script&gt;"'
    assert pretty(None) == "null"


def test_larger_containers_are_indented() -> None:
    value = {"first": "x" * 40, "second": "y" * 40}
    assert pretty(value) == '{\n  "first": "' + "x" * 40 + '",\n  "second": "' + "y" * 40 + '"\n}'


def test_long_strings_fold_with_their_length_and_the_whole_text_inside() -> None:
    trace = "Traceback <frame>\n" * 20
    html = pretty({"error": {"traceback": trace}})
    assert '<details class="fold"><summary>' in html
    assert f"({len(trace):,} characters)" in html
    assert "&lt;frame&gt;" in html
    assert "<frame>" not in html
    assert len(trace) > LONG_STRING


def test_large_nested_containers_fold_and_say_what_they_hold() -> None:
    html = pretty({"items": list(range(300))})
    assert "<summary>[…] 300 items</summary>" in html
    # The top level itself never folds: it is what the reader came to see.
    assert not html.startswith("<details")


def test_a_huge_value_is_cut() -> None:
    html = pretty("z" * (MOST + 10))
    assert "too large to lay out" in html
    assert len(html) < MOST + 500
