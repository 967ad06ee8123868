"""A definition's concurrency key, rendered over the input (workflows/dsl/concurrency.py)."""

from __future__ import annotations

import pytest

from workflows.dsl.concurrency import ConcurrencyKeyError, ConcurrencySpec, render_key


@pytest.mark.parametrize(
    ("key", "input", "expected"),
    [
        ("{{ input.customer }}", {"customer": "acme"}, "acme"),
        ("{{ input.customer }}", {"customer": 42}, "42"),
        ("{{ input.customer }}", {"customer": 2.5}, "2.5"),
        ("{{ input.flag }}", {"flag": True}, "true"),
        ("{{ input.region }}/{{ input.customer }}", {"region": "eu", "customer": 7}, "eu/7"),
        ("all", {}, "all"),
        ("{{ input.a.b }}", {"a": {"b": "deep"}}, "deep"),
    ],
)
def test_a_key_renders_to_text(key, input, expected) -> None:
    assert render_key(ConcurrencySpec(key=key, limit=1), input) == expected


@pytest.mark.parametrize(
    ("key", "input", "message"),
    [
        ("{{ input.customer }}", {}, "rendered null"),
        ("{{ input.customer }}", None, "rendered null"),
        ("{{ input.customer }}", {"customer": ""}, "rendered an empty string"),
        ("{{ input.customer }}", {"customer": [1]}, "rendered a list"),
        ("{{ input.customer }}", {"customer": "x" * 256}, "at most 255"),
        ("{{ input.n / `0` }}", {"n": 1}, "concurrency.key '{{ input.n / `0` }}'"),
    ],
)
def test_a_key_that_cannot_be_rendered_names_the_template(key, input, message) -> None:
    with pytest.raises(ConcurrencyKeyError, match=r"concurrency\.key") as raised:
        render_key(ConcurrencySpec(key=key, limit=1), input)
    assert message in str(raised.value)
