"""What the workers' logs say about Celery tasks: which a worker took, which are over.

The workers log one JSON record a line; Celery's own records name each task by its name
(an attempt's run_task by the shadow its message carries, attempt_name's "wf:...") and
its id, with its arguments' repr in `data`. A test reads them for the proof that a task
it is waiting on has run, where the database would show nothing (a refused claim, a
sweep that found nothing to do).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Celery's wording: taken by a worker, run to its end, raised, or dropped unrun.
_TASK = re.compile(
    r"^Task (?P<name>\S+)\[(?P<id>[0-9a-f-]{36})\] (?P<outcome>received|succeeded|raised)"
)
_REVOKED = re.compile(r"^Discarding revoked task: (?P<name>\S+)\[(?P<id>[0-9a-f-]{36})\]")
#: The outcomes after which a task taken does nothing more.
OVER = frozenset({"succeeded", "raised", "revoked"})


@dataclass(frozen=True)
class TaskLine:
    """One of Celery's records about one task."""

    name: str
    id: str
    outcome: str  # received, succeeded, raised or revoked
    args: str | None  # the repr of its positional arguments, when the record has it


def records(paths: Iterable[Path], mentioning: Iterable[str]) -> list[dict[str, Any]]:
    """The JSON records in these log files whose line mentions one of these texts (only
    those are parsed: a session's logs grow to megabytes, and waits read them often)."""
    texts = tuple(mentioning)
    found = []
    for path in paths:
        for line in path.read_text(errors="replace").splitlines():
            # Celery's banner lines are not JSON.
            if line.startswith("{") and any(text in line for text in texts):
                found.append(json.loads(line))
    return found


def task_lines(paths: Iterable[Path], mentioning: Iterable[str]) -> list[TaskLine]:
    """Celery's records about tasks in these log files, in order: those whose line
    mentions one of these texts (a task's name or id)."""
    lines = []
    for record in records(paths, mentioning):
        message = record.get("message", "")
        match = _TASK.match(message) or _REVOKED.match(message)
        if match is None:
            continue
        outcome = match.groupdict().get("outcome") or "revoked"
        args = (record.get("data") or {}).get("args")
        lines.append(TaskLine(match["name"], match["id"], outcome, args))
    return lines


def ids(lines: Iterable[TaskLine], outcomes: Iterable[str], name: str | None = None) -> set[str]:
    """The ids of tasks (of this name, if given) that reached one of these outcomes."""
    wanted = set(outcomes)
    return {t.id for t in lines if t.outcome in wanted and name in (None, t.name)}
