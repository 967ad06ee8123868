"""A rate-limited node under workflows.testing.run: its waits pass on the virtual clock,
and the log's start times keep to the limit."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta

import pytest

from tests.api.test_testing_harness import started, verified
from workflows.testing import run

pytestmark = pytest.mark.django_db


def test_a_rate_limited_map_runs_to_its_end_at_its_rate() -> None:
    definition = {
        "nodes": [
            {
                "id": "calls",
                "type": "map",
                "items": "{{ input.items }}",
                "node": {
                    "type": "function",
                    "function": "std.echo",
                    "input": "{{ item }}",
                    "rate_limit": {"per_second": 2, "burst": 1},
                },
            }
        ],
        "output": "{{ nodes.calls.output }}",
    }
    result = run(definition, {"items": list(range(6))})
    assert result.status == "succeeded", result.error
    assert result.output == list(range(6))
    stamps: list[datetime] = sorted(
        stamp for index in range(6) for stamp in started(result, f"calls[{index}]")
    )
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    # A burst of one, then one token every half second.
    assert all(gap >= timedelta(seconds=0.5) for gap in gaps), gaps
    assert stamps[-1] - stamps[0] >= timedelta(seconds=2.5)
    verified(result)
