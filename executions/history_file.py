"""One execution's history as a JSON file: exported from any database, replayed anywhere.

    {"format": FORMAT, "execution_id", "workflow", "version", "definition", "input",
     "status", "last_hash", "events": [{"seq", "type", "node_id", "attempt", "data",
     "timestamp", "source", "hash"}, ...]}

The events are the stored log as it is (hashes included), so a history exported from
production verifies on a laptop with `replay_execution --from-file FILE --verify`, no
rows needed: the chain check, the decisions and the fold need only the file. The golden
histories (tests/golden/histories/) have the same shape and can be read back too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from executions.engine.chain import Linked
from executions.engine.events import Event, EventType, Source

FORMAT = "django-replayable-workflows/history/1"
EVENT_KEYS = ("seq", "type", "node_id", "attempt", "data", "timestamp", "source", "hash")


class HistoryFileError(ValueError):
    """The file is not an exported history: says what is missing or malformed."""


@dataclass(frozen=True)
class History:
    execution_id: str
    workflow: str
    version: int | None
    definition: Any
    events: list[Event]
    links: list[Linked]
    last_hash: str | None


def exported(execution: Any, rows: list[tuple[Any, ...]]) -> dict[str, Any]:
    """The file's content for `execution` (an Execution row) and its log rows, given as
    tuples of the columns `EVENT_KEYS` names, in seq order."""
    return {
        "format": FORMAT,
        "execution_id": str(execution.pk),
        "workflow": execution.workflow.name,
        "version": execution.version.version,
        "definition": execution.version.definition,
        "input": execution.input,
        "status": execution.status,
        "last_hash": execution.last_hash,
        "events": [
            {
                **dict(zip(EVENT_KEYS, row, strict=True)),
                "timestamp": row[EVENT_KEYS.index("timestamp")].isoformat(),
            }
            for row in rows
        ],
    }


def read(raw: Any) -> History:
    """The history in a parsed file, or HistoryFileError naming what is wrong."""
    if not isinstance(raw, dict):
        raise HistoryFileError("the file does not hold a JSON object")
    missing = [key for key in ("execution_id", "definition", "events") if key not in raw]
    if missing:
        raise HistoryFileError(f"not an exported history: no {', '.join(missing)}")
    if not isinstance(raw["events"], list):
        raise HistoryFileError("events: not a list")
    events, links = [], []
    for index, item in enumerate(raw["events"]):
        try:
            event, link = _event(item)
        except (KeyError, TypeError, ValueError) as exc:
            raise HistoryFileError(f"events[{index}]: {type(exc).__name__}: {exc}") from None
        events.append(event)
        links.append(link)
    return History(
        execution_id=str(raw["execution_id"]),
        workflow=str(raw.get("workflow") or raw.get("name") or "?"),
        version=raw.get("version"),
        definition=raw["definition"],
        events=events,
        links=links,
        last_hash=raw.get("last_hash"),
    )


def _event(item: dict[str, Any]) -> tuple[Event, Linked]:
    moment = datetime.fromisoformat(item["timestamp"])
    event = Event(
        seq=int(item["seq"]),
        type=EventType(item["type"]),
        timestamp=moment,
        node_id=item["node_id"],
        attempt=item["attempt"],
        data=item["data"],
        source=Source(item["source"]),
    )
    link = Linked(
        seq=event.seq,
        type=item["type"],
        node_id=item["node_id"],
        attempt=item["attempt"],
        data=item["data"],
        timestamp=moment,
        hash=item.get("hash", ""),
    )
    return event, link
