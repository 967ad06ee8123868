"""An event starts its triggers' workflows on real workers, each linked to the event."""

from __future__ import annotations

from tests.factories import make_version
from triggers.models import EventRun
from triggers.services import event_publish, executions_of, trigger_create

ECHO = {"nodes": [{"id": "a", "type": "function", "function": "std.echo", "input": "{{ input }}"}]}


def test_an_event_runs_its_triggers_workflows_to_the_end(live) -> None:
    workflow = make_version(ECHO).workflow
    trigger_create(
        name=f"t-{workflow.name}"[:100],
        event=f"order.paid.{workflow.name}",
        workflow=workflow,
        input={"order": "{{ event.data.id }}"},
        filter="event.data.total > `10`",
    )
    small = event_publish(key=f"order.paid.{workflow.name}", data={"id": 1, "total": 5})
    big = event_publish(key=f"order.paid.{workflow.name}", data={"id": 2, "total": 50})
    assert executions_of(small) == []
    (started,) = executions_of(big)
    done = live.wait(started)
    assert done.status == "succeeded"
    assert done.output == {"a": {"order": 2}}
    assert EventRun.objects.get(event=big).execution_id == done.pk
