"""Expressions are evaluated under bounds: any failure is a TemplateError that says why,
fast, and the compiled-expression cache is bounded by the text it holds."""

from __future__ import annotations

import contextlib
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jmespath.parser import Parser

from tests.waiting import scaled
from workflows.dsl.bounded import CACHE, _UncachedParser, compile_bounded
from workflows.dsl.limits import overridden
from workflows.dsl.templates import TemplateError, render, search

STAGE = " | [@,@,@,@,@,@,@,@,@,@][]"
CONTEXT: dict[str, Any] = {"input": {"x": 1, "items": list(range(10_000)), "s": "abc"}}

# (expression, fragment of the message)
FAILS: list[Any] = [
    pytest.param("input.x" + STAGE * 10, "WORKFLOW_MAX_EXPRESSION_WORK", id="ten-stage-pipe"),
    pytest.param(
        "input.items[*].[@,@,@,@,@,@,@,@,@,@,@,@,@,@,@,@,@,@,@,@,@,@,@,@,@,@,@,@,@,@]",
        "WORKFLOW_MAX_EXPRESSION_WORK",
        id="wide-projection",
    ),
    pytest.param(
        "input.items | [" + ",".join(["@"] * 300) + "][]",
        "WORKFLOW_MAX_EXPRESSION_WORK",
        id="one-wide-flatten",
    ),
    pytest.param("ceil(`1e999`) == `0`", "OverflowError", id="ceil-overflow"),
    pytest.param("abs(input.s)", "could not be evaluated", id="wrong-type"),
    pytest.param("(" * 900 + "input" + ")" * 900, "nested too deeply", id="deep-parens"),
    pytest.param("input.x" + " || input.x" * 300, "WORKFLOW_MAX_EXPRESSION_LENGTH", id="length"),
    pytest.param("input.[", "not a valid JMESPath expression", id="syntax"),
]


@pytest.mark.parametrize(("expression", "fragment"), FAILS)
def test_a_failing_expression_is_a_template_error_that_says_why(
    expression: str, fragment: str
) -> None:
    started = time.monotonic()
    with pytest.raises(TemplateError) as info:
        search(expression, CONTEXT)
    assert fragment in str(info.value)
    # The budget counts the values built, not what a function does with them: a bound in
    # time is what catches uncounted work, generous and with the machine's factor.
    assert time.monotonic() - started < scaled(2.0)
    assert len(str(info.value)) < 600, "messages stay short whatever the expression"


def test_legitimate_work_stays_inside_the_budget() -> None:
    assert search("length(input.items[*].{a: @, b: @})", CONTEXT) == 10_000
    assert search("sort_by(input.items[*].{a: @}, &a)[-1].a", CONTEXT) == 9_999


def test_one_render_shares_one_budget_across_its_templates() -> None:
    """A thousand templates in one input get no more work than one template."""
    one = "{{ input.items[*].[@,@,@,@,@,@,@,@,@,@] }}"
    search(one.strip("{} "), CONTEXT)  # alone, within budget
    with pytest.raises(TemplateError, match="WORKFLOW_MAX_EXPRESSION_WORK"):
        render([one] * 10, CONTEXT)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        pytest.param("{{ `1e999` }}", "NaN or Infinity", id="infinity"),
        pytest.param(["{{ input.items }}"] * 20, "WORKFLOW_MAX_RENDERED_BYTES", id="too-big"),
        pytest.param("{{ join('', input.items[*].to_string(@)) }}", None, id="text-fits"),
    ],
)
def test_a_rendered_value_must_be_storable_json_within_the_size_bound(
    value: Any, fragment: str | None
) -> None:
    with overridden(max_rendered_bytes=200_000):
        if fragment is None:
            render(value, CONTEXT)
            return
        with pytest.raises(TemplateError, match=fragment):
            render(value, CONTEXT)


def test_the_compiled_cache_is_bounded_by_the_text_it_holds() -> None:
    CACHE.clear()
    with overridden(expression_cache_chars=10_000):
        for i in range(2_000):
            compile_bounded(f"input.a{i} || input.b{i} || input.c{i}")
        assert 0 < CACHE.chars <= 10_000
        recent = "input.a1999 || input.b1999 || input.c1999"
        assert CACHE.get(recent) is not None
        assert CACHE.get("input.a0 || input.b0 || input.c0") is None
    CACHE.clear()


def test_no_parser_cache_keeps_what_it_parses() -> None:
    """CACHE, bounded by the text it holds, is the only place parse trees stay: the parser
    compile_bounded uses turns jmespath's class-level cache off (a cache of size 0, which
    jmespath 1.0.1 would still fill, one entry per expression, forever)."""
    # Parser._CACHE is private: the jmespath stubs leave it out.
    before = dict(Parser._CACHE)  # type: ignore[attr-defined]
    for i in range(3):
        compile_bounded(f"input.never_seen_before_by_anyone_{i}_" + "x" * 100)
    assert _UncachedParser._CACHE == {}
    assert before == Parser._CACHE  # type: ignore[attr-defined]


EXPRESSIONS = st.text(alphabet="@[]|,.*`1e9 ()&!<=>abcdfilnorstu'{}:?-", max_size=120)


@settings(max_examples=300, deadline=None)
@given(
    expression=EXPRESSIONS,
    value=st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False)
        | st.text(max_size=5),
        lambda inner: (
            st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=3), inner, max_size=5)
        ),
        max_leaves=20,
    ),
)
def test_any_expression_over_any_input_returns_or_raises_template_error(
    expression: str, value: Any
) -> None:
    """Nothing else escapes: no OverflowError, RecursionError, TypeError..."""
    with contextlib.suppress(TemplateError):
        search(expression, {"input": value})
