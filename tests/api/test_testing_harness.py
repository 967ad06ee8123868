"""workflows.testing.run: the real engine in the test's process and transaction, on a
virtual clock, every node kind, each run's log verified by replay_execution --verify."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from django.core.management import call_command

from workflows.testing import run

pytestmark = pytest.mark.django_db


def at(event: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(event["timestamp"])


def verified(result: Any) -> None:
    call_command("replay_execution", str(result.id), "--verify", stdout=open("/dev/null", "w"))


def test_a_function_and_a_day_long_delay() -> None:
    definition = {
        "nodes": [
            {"id": "hello", "type": "function", "function": "greet", "input": {"who": "{{ input.who }}"}},
            {"id": "wait", "type": "delay", "seconds": 86400, "depends_on": ["hello"]},
        ]
    }
    result = run(definition, {"who": "x"}, functions={"greet": lambda i, ctx: {"hi": i["who"]}})
    assert result.status == "succeeded", result.error
    assert result.node("hello").output == {"hi": "x"}
    first, last = at(result.events[0]), at(result.events[-1])
    assert last - first >= timedelta(days=1)
    verified(result)
