"""Archives: each execution's history file (`replay_execution --export`'s format), written
and read back before anything of it is deleted.

One file per execution, `<id>.json`, written to a temporary name and renamed into place,
so a purge killed while writing leaves either the whole file or none under that name; a
purge run again writes it again. A file counts as archived once it reads back as a
history whose hash chain ends at the execution's last hash and holds all its events.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

from executions import history_file
from executions.engine.chain import first_break
from executions.kernel.log import events_of
from executions.models import Execution


class ArchiveError(RuntimeError):
    """An archive could not be written, or does not read back as the execution's log."""


@dataclass(frozen=True)
class Archived:
    """What an archive holds of the execution: the purge deletes only that."""

    events: int
    last_hash: str


def path_for(directory: Path, execution_id: UUID | str) -> Path:
    return directory / f"{execution_id}.json"


def export(execution: Execution, path: Path) -> int:
    """Write the execution's history file (atomically); returns how many events it holds."""
    rows = list(events_of(execution.pk).values_list(*history_file.EVENT_KEYS))
    text = json.dumps(history_file.exported(execution, rows), indent=1) + "\n"
    partial = path.with_name(f".{path.name}.partial")
    try:
        with partial.open("w") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        partial.replace(path)
    except OSError as exc:
        raise ArchiveError(f"could not write {path}: {exc}") from exc
    return len(rows)


def verified(path: Path, execution_id: UUID | str, *, events: int, last_hash: str) -> Archived:
    """The archive at `path`, read back: its chain intact up to `last_hash`, `events`
    events; ArchiveError naming what differs."""
    try:
        history = history_file.read(json.loads(path.read_text()))
    except (OSError, ValueError) as exc:
        raise ArchiveError(f"{path} does not read back: {exc}") from exc
    if history.execution_id != str(execution_id):
        raise ArchiveError(f"{path} holds execution {history.execution_id}, not {execution_id}")
    if len(history.events) != events:
        raise ArchiveError(f"{path} holds {len(history.events)} events, the log {events}")
    broken = first_break(history.links, last_hash=last_hash)
    if broken is not None:
        raise ArchiveError(f"{path}: {broken}")
    return Archived(events, last_hash)


def archive(directory: Path, ids: list[UUID]) -> dict[UUID, Archived]:
    """Each execution's file under `directory`, written and verified."""
    done: dict[UUID, Archived] = {}
    executions = Execution.objects.filter(pk__in=ids).select_related("workflow", "version")
    for execution in executions.defer("snapshot"):
        path = path_for(directory, execution.pk)
        export(execution, path)
        done[execution.pk] = verified(
            path, execution.pk, events=execution.last_seq, last_hash=execution.last_hash
        )
    return done
