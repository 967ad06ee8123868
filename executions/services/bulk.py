"""Bulk operator actions: cancel or retry many executions, each through its own service
in its own transaction, so one refusal (or one broken execution) touches no other."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any
from uuid import UUID

from django.core.exceptions import ValidationError

from executions.engine.events import Source
from executions.filters import ExecutionFilter
from executions.models import Execution
from executions.services import control
from executions.services.containment import TRANSIENT, contain
from workflows.conf import engine_settings

ACTIONS: dict[str, Callable[..., Execution]] = {
    "cancel": control.execution_cancel,
    "retry": control.execution_retry,
}
#: The keys a bulk `filter` takes: the filters of GET /executions, with their meanings.
FILTER_KEYS = ("status", "workflow", "created_after", "created_before", "has_failed_nodes")


def bulk_apply(
    action: str,
    *,
    ids: Iterable[UUID | str] | None = None,
    filter: Mapping[str, Any] | None = None,
    by: str = "",
) -> dict[str, Any]:
    """Apply `action` ("cancel" or "retry") to the executions named by `ids` or matched by
    `filter` (exactly one of them). Returns {"matched": executions found, "accepted",
    "skipped": [{"id", "reason"}]}: ids that name no execution, executions the service
    refused (their 409 text) or that failed with an engine error. Raises ValidationError
    past WORKFLOW_BULK_MAX_EXECUTIONS executions or for a bad filter."""
    run = ACTIONS.get(action)
    if run is None:
        raise ValueError(f"unknown bulk action {action!r}; one of {sorted(ACTIONS)}")
    if (ids is None) == (filter is None):
        raise ValidationError("give either ids or filter, not both and not neither")
    limit = engine_settings.BULK_MAX_EXECUTIONS
    if ids is not None:
        targets, skipped = _by_ids(ids, limit)
    else:
        targets, skipped = _by_filter(filter or {}, limit), []
    accepted = 0
    for execution_id in targets:
        reason = _apply_one(run, action, execution_id, by)
        if reason is None:
            accepted += 1
        else:
            skipped.append({"id": execution_id, "reason": reason})
    return {"matched": len(targets), "accepted": accepted, "skipped": skipped}


def _too_many(limit: int, what: str) -> ValidationError:
    return ValidationError(
        f"{what} more than {limit} executions; narrow it down or raise WORKFLOW_BULK_MAX_EXECUTIONS"
    )


def _by_ids(ids: Iterable[UUID | str], limit: int) -> tuple[list[str], list[dict[str, Any]]]:
    wanted = list(dict.fromkeys(str(i) for i in ids))  # once each, in the order given
    if len(wanted) > limit:
        raise _too_many(limit, f"{len(wanted)} ids name")
    found = {str(pk) for pk in Execution.objects.filter(pk__in=wanted).values_list("pk", flat=True)}
    missing = [{"id": i, "reason": "no such execution"} for i in wanted if i not in found]
    return [i for i in wanted if i in found], missing


def _by_filter(filter: Mapping[str, Any], limit: int) -> list[str]:
    unknown = sorted(set(filter) - set(FILTER_KEYS))
    if unknown:
        raise ValidationError(f"unknown filter keys {unknown}; known: {list(FILTER_KEYS)}")
    data = {key: _as_query(value) for key, value in filter.items() if value is not None}
    matched = ExecutionFilter(data=data, queryset=Execution.objects.all())
    if not matched.is_valid():
        raise ValidationError({f"filter.{key}": errors for key, errors in matched.errors.items()})
    rows = matched.qs.order_by("created_at", "id").values_list("pk", flat=True)[: limit + 1]
    targets = [str(pk) for pk in rows]
    if len(targets) > limit:
        raise _too_many(limit, "the filter matches")
    return targets


def _as_query(value: Any) -> str:
    """A JSON value as the list's query string would carry it (the filter parses text)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def _apply_one(
    run: Callable[..., Execution], action: str, execution_id: str, by: str
) -> str | None:
    """None: accepted; else why it was skipped."""
    try:
        run(execution_id=execution_id, by=by)
    except (control.NotAllowed, control.UnknownNode) as refused:
        return str(refused)
    except TRANSIENT:
        raise  # the database's trouble, not this execution's: the whole request fails
    except Exception as exc:
        # This execution's trouble: it ends with an engine error, the others go on.
        contain(exc, where=f"bulk {action}", execution_id=execution_id, source=Source.API)
        return f"engine error: {type(exc).__name__}: {exc}"
    return None
