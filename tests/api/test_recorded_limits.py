"""An execution records the bounds decide reads when it starts (workflow_started), keeps
to them while it runs, and its stored log still verifies after a setting changed."""

from __future__ import annotations

import pytest

from executions.integrity import check
from executions.kernel.log import verifiable_log
from executions.models import Attempt, AttemptStatus, Event, Execution
from executions.services.attempts import attempt_claim, attempt_complete
from tests.factories import start
from workflows.dsl.limits import decision_limits, overridden

pytestmark = pytest.mark.django_db

MAP = {
    "nodes": [
        {
            "id": "each",
            "type": "map",
            "items": "input.items",
            "node": {"type": "function", "function": "std.echo", "input": {"v": "{{ item }}"}},
        }
    ]
}


def scheduled(execution: Execution) -> list[Attempt]:
    return list(Attempt.objects.filter(execution=execution, status=AttemptStatus.SCHEDULED))


def test_a_setting_changed_mid_run_changes_nothing_for_a_started_execution() -> None:
    with overridden(map_default_max_parallel=2):
        execution = start(MAP, {"items": list(range(5))})
        at_start = decision_limits()
    recorded = Event.objects.get(execution=execution, type="workflow_started").data["limits"]
    assert recorded == at_start
    assert recorded["map_default_max_parallel"] == 2
    assert len(scheduled(execution)) == 2
    # The operator raises the setting while it runs: this execution keeps two at a time.
    with overridden(map_default_max_parallel=5):
        while waiting := scheduled(execution):
            assert len(waiting) <= 2
            for attempt in waiting:
                assert attempt_claim(attempt_id=attempt.pk, worker_id="w") is not None
                assert attempt_complete(attempt_id=attempt.pk, worker_id="w", output=1)
        execution.refresh_from_db()
        assert execution.status == "succeeded"
        # verify_logs / replay --verify re-derive every decision under today's settings.
        events, linked = verifiable_log(execution.pk)
        assert check(execution, linked, events) == []
