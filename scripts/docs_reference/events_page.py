"""docs/reference/events-statuses.md: the statuses of executions, tasks and attempts, and every
event type with the payload it records (executions/engine: statuses.py, events.py,
payloads.py). A member's meaning is its `#:` comment in the code, else MEANINGS below;
one with neither fails the generator."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping
from enum import Enum
from pathlib import Path

from executions.engine.events import EventType, Source
from executions.engine.payloads import PAYLOADS, Payload
from executions.engine.statuses import ExecutionStatus, TaskStatus
from executions.models import AttemptStatus
from scripts.docs_reference.markdown import (
    GENERATED,
    Undocumented,
    code,
    comment_docs,
    first_paragraph,
    table,
)

ROOT = Path(__file__).resolve().parents[2]

#: Meanings of the members the code leaves without a `#:` comment, by enum and value.
MEANINGS: Mapping[str, Mapping[str, str]] = {
    "ExecutionStatus": {
        "pending": "Created; waiting to start (e.g. behind a concurrency limit).",
        "running": "Started: nodes are being scheduled and run.",
        "succeeded": "Every node settled and none failed for good; `output` is set.",
        "failed": "A node failed for good (compensations ran), or the engine failed it.",
        "cancelling": "A cancel was asked for: running attempts and compensations finish.",
        "cancelled": "Cancelled; nothing more happens.",
    },
    "TaskStatus": {
        "pending": "Not started: its parents have not settled (or its rule waits).",
        "scheduled": "An attempt is queued for a worker.",
        "running": "A worker holds the attempt's lease (or a map's items are running).",
        "retrying": "The attempt failed; the next one starts after the backoff.",
        "waiting": "Waiting in the orchestrator: a timer, an approval or a signal.",
        "succeeded": "Done; `output` is recorded.",
        "failed": "The attempt failed (for good when no retry is left).",
        "skipped": "Will not run: `when` was falsy or its trigger rule cannot hold.",
        "cancelled": "Stopped by a cancel.",
    },
    "AttemptStatus": {
        "scheduled": "Queued for a worker; nobody has claimed it.",
        "running": "Claimed by a worker, which renews its lease.",
        "succeeded": "Its result (the output) is recorded.",
        "failed": "It raised, or the HTTP call failed; the error is recorded.",
        "timed_out": "Its lease or `timeout_seconds` ran out.",
        "cancelled": "Cancelled before it ended.",
    },
    "EventType": {
        "workflow_started": "The execution started, with its input.",
        "task_scheduled": "A node's attempt was scheduled (or a waiting node started "
        "waiting), with its rendered input.",
        "task_started": "A worker claimed the attempt.",
        "task_completed": "The attempt succeeded, with its output.",
        "task_failed": "The attempt failed, with its error.",
        "task_timed_out": "The attempt's lease or timeout ran out.",
        "task_retry_scheduled": "The failed attempt will be retried after a backoff.",
        "task_skipped": "The node will not run.",
        "task_cancelled": "The node's attempt was cancelled.",
        "timer_started": "A delay (or a retry's backoff) timer started.",
        "timer_fired": "The timer is due.",
        "signal_received": "An approval's answer, or a named signal, arrived.",
        "child_workflow_started": "A `workflow` node started its child execution.",
        "compensation_scheduled": "A succeeded node's compensation was scheduled.",
        "retry_requested": "An operator asked to retry failed nodes.",
        "workflow_cancel_requested": "An operator asked to cancel the execution.",
        "workflow_resumed": 'An operator resumed the paused execution (data: {"by"}).',
        "workflow_completed": "The execution succeeded, with its output.",
        "workflow_failed": "The execution failed, with the error.",
        "workflow_cancelled": "The execution is cancelled.",
    },
    "Source": {
        "engine": "A decision of the orchestrator: replay derives it again.",
        "worker": "A worker recorded it (a start or a result).",
        "timer": "A timer fired.",
        "sweeper": "The sweeper recorded it (a lease that ran out).",
        "api": "A request recorded it (a signal, a cancel, a retry).",
    },
}


def members(enum: type[Enum]) -> str:
    comments = comment_docs(enum)
    known = MEANINGS.get(enum.__name__, {})
    rows = []
    for member in enum:
        text = comments.get(member.name) or known.get(str(member.value))
        if not text:
            module = Path(inspect.getsourcefile(enum) or "?").resolve().relative_to(ROOT)
            raise Undocumented(
                f"{enum.__name__}.{member.name} has no meaning: put a `#:` comment above it"
                f" in {module}, or add it to MEANINGS in scripts/docs_reference/events_page.py"
            )
        rows.append((code(member.value), text))
    return table(("Value", "Meaning"), rows)


def _type_name(annotation: object) -> str:
    """The annotation as written (the module postpones them: each is its source text)."""
    if isinstance(annotation, str):
        return annotation
    return getattr(annotation, "__name__", str(annotation))


def _docstring(cls: type) -> str:
    """Its own docstring's first paragraph; not the signature dataclass writes for a class
    without one."""
    doc = cls.__dict__.get("__doc__") or ""
    return "" if doc.startswith(f"{cls.__name__}(") else first_paragraph(doc)


def payload_fields(cls: type[Payload]) -> str:
    comments = {}
    for klass in reversed(cls.__mro__):
        if dataclasses.is_dataclass(klass):
            comments.update(comment_docs(klass))
    rows = []
    for spec in dataclasses.fields(cls):
        if spec.name == "extra":
            continue
        optional = "only when set" if spec.metadata.get("optional") else "always"
        rows.append(
            (
                code(spec.name),
                code(_type_name(spec.type)),
                optional,
                comments.get(spec.name, ""),
            )
        )
    if not rows:
        return "No data.\n"
    return table(("Key", "Type", "Written", "Meaning"), rows)


def render() -> str:
    out = [
        GENERATED,
        "# Events and statuses\n\n",
        "An execution's history is its event log: every event has a `seq` (1, 2, ... in "
        "the execution), a `type`, a `timestamp`, the `node_id` and `attempt` it concerns "
        "(if any), its `data` (the payload below) and its `source`. Statuses are what the "
        "API reports, folded from the events.\n\n",
        "## Execution statuses\n\n",
        members(ExecutionStatus),
        "\n## Task statuses\n\n",
        "A task is one node of an execution (a map's items are tasks `<id>[<index>]`).\n\n",
        members(TaskStatus),
        "\n## Attempt statuses\n\n",
        "An attempt is one try of a task on a worker.\n\n",
        members(AttemptStatus),
        "\n## Event sources\n\n",
        first_paragraph(Source.__doc__) + "\n\n",
        members(Source),
        "\n## Event types\n\n",
        members(EventType),
        "\n## Event payloads\n\n",
        "The keys of each event's `data`. Keys this version does not know (written by a "
        "newer one, or added by a shell, such as `by`) are kept as they were.\n",
    ]
    for event_type in EventType:
        cls = PAYLOADS.get(event_type)
        out.append(f"\n### {event_type.value}\n\n")
        if cls is None:
            out.append("No data.\n")
            continue
        doc = _docstring(cls)
        out.append(f"Payload `{cls.__name__}`" + (f": {doc}" if doc else ".") + "\n\n")
        out.append(payload_fields(cls))
    return "".join(out)
