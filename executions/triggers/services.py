"""Writes of triggers, and publishing an event: every enabled trigger of its key whose
filter holds starts its workflow, once per (event, trigger)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from executions.services import admission
from executions.services.start import execution_start
from executions.triggers.models import PublishedEvent, Trigger, TriggerRun
from workflows.dsl.bounded import close_step, open_step
from workflows.dsl.templates import (
    TemplateError,
    compile_expression,
    expressions,
    render,
    root_of,
    search,
)
from workflows.models import WorkflowDefinition
from workflows.selectors import version_resolve
from workflows.services import version_pinned

ROOT = "event"


def _check_expression(expression: str, field: str) -> None:
    if root_of(expression) != ROOT:
        raise ValidationError(
            {field: [f"'{expression[:60]}' must read the event, e.g. event.data.id"]}
        )
    try:
        compile_expression(expression)
    except TemplateError as exc:
        raise ValidationError({field: [str(exc)]}) from None


def _check_templates(*, input: Any = None, filter: str = "") -> None:
    for expression in expressions(input):
        _check_expression(expression, "input")
    if filter:
        _check_expression(filter, "filter")


def trigger_create(
    *,
    name: str,
    event: str,
    workflow: WorkflowDefinition,
    version: int | None = None,
    input: Any = None,
    filter: str = "",
    enabled: bool = True,
    by: str = "",
) -> Trigger:
    """Raises ValidationError naming the field: a taken name, an unknown version, an
    expression that does not read the event or does not parse."""
    pinned = version_pinned(workflow=workflow, number=version)
    _check_templates(input=input, filter=filter)
    try:
        with transaction.atomic():
            return Trigger.objects.create(
                name=name,
                event=event,
                workflow=workflow,
                version=pinned,
                input=input,
                filter=filter,
                enabled=enabled,
                created_by=by,
            )
    except IntegrityError:
        raise ValidationError({"name": [f"A trigger named '{name}' exists."]}) from None


#: What PATCH /triggers/{name} (and the admin) may change.
UPDATABLE = ("enabled", "filter", "input", "version")


def trigger_check(*, trigger: Trigger, changes: dict[str, Any]) -> None:
    """Raise ValidationError naming the field, as trigger_create does, for `changes`."""
    if "version" in changes:
        version_pinned(workflow=trigger.workflow, number=changes["version"])
    _check_templates(input=changes.get("input"), filter=changes.get("filter", ""))


def trigger_update(*, trigger: Trigger, changes: dict[str, Any]) -> Trigger:
    """PATCH: enabled, filter, input (null: the event's data), version (null: the latest);
    an absent key is unchanged. Validated as on create."""
    _check_templates(input=changes.get("input"), filter=changes.get("filter", ""))
    values = {name: changes[name] for name in UPDATABLE if name in changes}
    if "version" in values:
        values["version"] = version_pinned(workflow=trigger.workflow, number=values["version"])
    fields = list(values)
    for name, value in values.items():
        setattr(trigger, name, value)
    if fields:
        trigger.save(update_fields=fields)
    return trigger


def event_publish(
    *, key: str, data: Any = None, idempotency_key: str | None = None, by: str = ""
) -> PublishedEvent:
    """Record the event and start every matching trigger's workflow. A repeat with the same
    idempotency key returns the first event and starts nothing."""
    if idempotency_key is not None:
        found = PublishedEvent.objects.filter(idempotency_key=idempotency_key).first()
        if found is not None:
            return found
    # Each trigger's start admits after the commit: locking several concurrency keys in
    # the order the triggers come could deadlock two events (services/admission.py).
    with admission.deferred(), transaction.atomic():
        event = PublishedEvent.objects.create(
            key=key, data=data, idempotency_key=idempotency_key, created_by=by
        )
        context = {"event": {"key": key, "data": data}}
        for trigger in Trigger.objects.filter(event=key, enabled=True).select_related(
            "workflow", "version"
        ):
            _run(trigger, event, context)
        return event


def _run(trigger: Trigger, event: PublishedEvent, context: dict[str, Any]) -> None:
    step = open_step()
    try:
        if trigger.filter and not search(trigger.filter, context):
            return
        input = (
            context["event"]["data"] if trigger.input is None else render(trigger.input, context)
        )
    except TemplateError as exc:
        TriggerRun.objects.create(event=event, trigger_name=trigger.name, error=str(exc))
        return
    finally:
        close_step(step)
    version = trigger.version or version_resolve(workflow=trigger.workflow, number=None)
    if version is None:
        TriggerRun.objects.create(event=event, trigger_name=trigger.name, error="no version")
        return
    execution, _ = execution_start(
        version=version,
        input={} if input is None else input,
        engine_key=f"event:{event.pk}:{trigger.name}",
        by=f"event:{event.pk}",
    )
    TriggerRun.objects.create(event=event, trigger_name=trigger.name, execution=execution)


def executions_of(event: PublishedEvent) -> list[str]:
    return [str(run.execution_id) for run in event.runs.all() if run.execution_id is not None]
