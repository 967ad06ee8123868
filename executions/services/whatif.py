"""What-if replay: a recorded execution against another version of its workflow (and
optionally another input). Reads only; executions/services/control.py starts the new
execution a report describes."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from django.core.exceptions import ValidationError

from executions.definitions import definition_for
from executions.engine.counterfactual import Report, counterfactual
from executions.engine.events import Decision, EventType
from executions.engine.payloads import TaskCompleted, decided
from executions.kernel.log import engine_events
from executions.models import Execution
from workflows.dsl import Definition
from workflows.models import WorkflowVersion

#: `input` not given: the recorded one.
RECORDED = object()


def version_of(execution: Execution, number: int) -> WorkflowVersion:
    """The execution's workflow's version `number`, or a 400 naming the versions there are."""
    found = WorkflowVersion.objects.filter(
        workflow_id=execution.workflow_id, version=number
    ).first()
    if found is None:
        latest = (
            WorkflowVersion.objects.filter(workflow_id=execution.workflow_id)
            .order_by("-version")
            .values_list("version", flat=True)
            .first()
        )
        raise ValidationError(
            {"version": [f"this workflow has no version {number}; its versions are 1 to {latest}"]}
        )
    return found


def replay_report(
    *, execution: Execution, version: WorkflowVersion, input: Any = RECORDED
) -> Report:
    """What `execution`'s recorded history would have done under `version`.

    A candidate that cannot even be decided (a corrupted row, an engine bug it meets) is the
    request's problem to report, a 400 naming the version, never a 500."""
    with _unreplayable(f"version {version.version}"):
        return _counterfactual(execution, definition_for(version.pk), input)


def candidate_report(*, execution: Execution, candidate: Definition) -> Report:
    """What `execution`'s recorded history would have done under a definition that is not
    stored yet (a version about to be created); a ValidationError if it cannot be decided."""
    with _unreplayable("the new definition"):
        return _counterfactual(execution, candidate, RECORDED)


def _counterfactual(execution: Execution, candidate: Definition, input: Any) -> Report:
    extra = {} if input is RECORDED else {"input": input}
    return counterfactual(
        definition_for(execution.version_id),
        candidate,
        engine_events(execution.pk),
        execution_id=str(execution.pk),
        **extra,
    )


@contextmanager
def _unreplayable(what: str) -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        message = f"{what} cannot be replayed against this history: {exc}"
        raise ValidationError({"version": [message]}) from exc


def reused_results(outputs: Mapping[str, Any], source: Execution) -> list[Decision]:
    """The facts a replay records first: each reused node's recorded output."""
    return [
        decided(
            EventType.TASK_COMPLETED,
            TaskCompleted(output=output, reused_from=str(source.pk)),
            node_id,
        )
        for node_id, output in outputs.items()
    ]
