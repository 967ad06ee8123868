"""Golden histories: event logs recorded from real workers, checked in, replayed here.

A stored execution must stay readable by every later version of the engine: folding its
log gives the state the API showed when it was recorded, every recorded decision is the
one decide takes today, and the hash chain holds. A change to fold, decide, the event
payloads or the canonical hash form that breaks any of that fails here, before it reaches
a database full of real executions. Pure: no database. Recorded by
tests/integration/test_golden_record.py.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from executions.engine.chain import Linked, first_break
from executions.engine.events import Event, EventType, Source
from executions.engine.fold import fold
from executions.engine.verify import verify
from workflows.dsl import NODE_TYPES
from workflows.dsl.parser import parse_definition

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def engine_events(record: dict[str, Any]) -> list[Event]:
    return [
        Event(
            seq=e["seq"],
            type=EventType(e["type"]),
            timestamp=datetime.fromisoformat(e["timestamp"]),
            node_id=e["node_id"],
            attempt=e["attempt"],
            data=e["data"],
            source=Source(e["source"]),
        )
        for e in record["events"]
    ]


def test_there_are_golden_histories() -> None:
    assert len(HISTORIES) >= 10, "record them: see tests/integration/test_golden_record.py"


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
def test_history_replays_to_what_was_shown(path: Path) -> None:
    record = load(path)
    definition = parse_definition(record["definition"])
    events = engine_events(record)

    divergence = verify(definition, events, execution_id=record["execution_id"])
    assert divergence is None, f"{path.name}: {divergence}"

    state = fold(events, execution_id=record["execution_id"])
    expected = record["expected"]
    assert (state.status, state.output, state.error) == (
        expected["status"],
        expected["output"],
        expected["error"],
    ), path.name
    for node_id, shown in expected["nodes"].items():
        node = state.node(node_id)
        folded = {
            "status": node.status,
            "attempts": node.attempt,
            "retry_count": node.retry_count,
            "output": node.output,
            "error": node.error,
        }
        assert folded == shown, f"{path.name}: node {node_id}"


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
def test_history_hash_chain_holds(path: Path) -> None:
    record = load(path)
    linked = [
        Linked(
            seq=e["seq"],
            type=e["type"],
            node_id=e["node_id"],
            attempt=e["attempt"],
            data=e["data"],
            timestamp=datetime.fromisoformat(e["timestamp"]),
            hash=e["hash"],
        )
        for e in record["events"]
    ]
    assert first_break(linked, last_hash=record["last_hash"]) is None, path.name


def test_histories_cover_every_event_type_and_node_kind() -> None:
    records = [load(path) for path in HISTORIES]
    seen_types = {e["type"] for r in records for e in r["events"]}
    missing = {t.value for t in EventType} - seen_types
    assert missing == set(), f"no golden history has {sorted(missing)}: record one"
    kinds = {n["type"] for r in records for n in r["definition"]["nodes"]}
    assert kinds >= set(NODE_TYPES), f"no golden history has {sorted(set(NODE_TYPES) - kinds)}"
