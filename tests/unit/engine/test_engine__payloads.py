"""Event payloads as types (engine/payloads.py): one codec, lossless on what is stored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from executions.engine import payloads as p
from executions.engine.containment import engine_error_data
from executions.engine.errors import ErrorRecord
from executions.engine.events import EventType

HISTORIES = sorted((Path(__file__).parents[2] / "golden" / "histories").glob("*.json"))
STORED = [
    (EventType(e["type"]), e["data"])
    for path in HISTORIES
    for e in json.loads(path.read_text())["events"]
]


def test_every_event_type_has_a_payload_type() -> None:
    assert set(p.PAYLOADS) == set(EventType)


def test_every_stored_payload_decodes_and_encodes_back_unchanged() -> None:
    assert len(STORED) > 100
    for event_type, data in STORED:
        payload = p.from_json(event_type, data)
        assert isinstance(payload, p.PAYLOADS[event_type])
        assert p.to_json(payload) == data, event_type
        assert not payload.extra, f"{event_type}: a key the types do not know: {payload.extra}"


def test_unknown_keys_are_kept_and_written_back() -> None:
    stored = {"output": {"x": 1}, "added_by_a_newer_engine": [1, 2]}
    payload = p.from_json(EventType.TASK_COMPLETED, stored)
    assert isinstance(payload, p.TaskCompleted)
    assert payload.output == {"x": 1}
    assert payload.extra == {"added_by_a_newer_engine": [1, 2]}
    assert p.to_json(payload) == stored


def test_optional_fields_are_left_out_and_others_always_written() -> None:
    assert p.to_json(p.TaskScheduled(input={"a": 1}, type="function")) == {
        "input": {"a": 1},
        "type": "function",
    }
    assert list(p.to_json(p.TaskScheduled(input=None, type="http", retry=True))) == [
        "input",
        "type",
        "retry",
    ]
    # An output of null is an output.
    assert p.to_json(p.TaskCompleted(output=None)) == {"output": None}
    assert p.to_json(p.TaskFailed()) == {}


def test_error_record_round_trip_keeps_details_in_order() -> None:
    stored = {
        "type": "HTTPStatusError",
        "message": "503",
        "retryable": True,
        "status_code": 503,
        "body": "busy",
    }
    error = ErrorRecord.from_json(stored)
    assert (error.type, error.message, error.retryable) == ("HTTPStatusError", "503", True)
    assert error.details == {"status_code": 503, "body": "busy"}
    assert list(error.to_json()) == list(stored)
    # A workflow's error names no type: none is added.
    assert ErrorRecord(message="node 'a' failed").to_json() == {"message": "node 'a' failed"}


def test_an_error_wraps_its_cause() -> None:
    inner = {"type": "Boom", "message": "no", "retryable": False}
    outer = ErrorRecord("MapItemFailed", "item m[0] failed", False, {"cause": inner})
    assert outer.cause == ErrorRecord("Boom", "no", False)
    assert ErrorRecord("X").cause is None


def test_a_stored_error_that_is_not_an_object_still_decodes() -> None:
    payload = p.decode(p.TaskFailed, {"error": "disk full"})
    assert payload.error == ErrorRecord(message="disk full")


def test_engine_error_data_is_the_engine_error_payload() -> None:
    """(Its exact JSON is pinned by test_engine__engine_error.py.)"""
    data = engine_error_data(ValueError("broken"), "sweeper: advance")
    fact = p.from_json(EventType.ENGINE_ERROR, data)
    assert isinstance(fact, p.EngineErrorFact)
    assert fact.error is not None
    assert fact.error.details == {"where": "sweeper: advance"}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(
    st.sampled_from(sorted(EventType)),
    st.dictionaries(st.text(max_size=12), json_values, max_size=5),
)
def test_any_stored_object_survives_the_codec(event_type: EventType, data: dict) -> None:
    """Every stored key comes back with its value (an error object through ErrorRecord
    aside); a known key it lacks is written with its default, an optional one stored as
    null is left out."""
    back = p.to_json(p.from_json(event_type, data))
    known = {
        name: (optional, error) for name, optional, error in p._plan(p.PAYLOADS[event_type]).known
    }
    for key, value in data.items():
        optional, error = known.get(key, (False, False))
        if optional and value is None:
            assert key not in back
        elif not (error and value):
            assert back[key] == value, key
    defaults = p.PAYLOADS[event_type]()
    for key in back.keys() - data.keys():
        assert key in known, key
        assert back[key] == getattr(defaults, key), key


@pytest.mark.parametrize("event_type", sorted(EventType))
def test_a_payload_without_data_decodes_to_its_defaults(event_type: EventType) -> None:
    payload = p.from_json(event_type, {})
    assert payload == p.PAYLOADS[event_type]()
