"""The hash chain: any single edit of a stored event breaks verification at that seq."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from executions.engine.chain import (
    GENESIS,
    Linked,
    canonical,
    event_hash,
    first_break,
    link,
    normalize,
)

T0 = datetime(2026, 1, 31, 12, 0, tzinfo=UTC)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def logs(draw: st.DrawFn) -> list[Linked]:
    """A well-chained log of 1..12 events with arbitrary JSON data."""
    count = draw(st.integers(min_value=1, max_value=12))
    events, previous = [], GENESIS
    for seq in range(1, count + 1):
        fields: dict[str, Any] = {
            "seq": seq,
            "type": draw(st.sampled_from(["workflow_started", "task_scheduled", "task_failed"])),
            "node_id": draw(st.none() | st.sampled_from(["a", "b", "map[3]"])),
            "attempt": draw(st.none() | st.integers(min_value=1, max_value=5)),
            "data": draw(st.dictionaries(st.text(max_size=6), json_values, max_size=4)),
            "timestamp": T0 + timedelta(microseconds=draw(st.integers(0, 10**9))),
        }
        previous = event_hash(previous, **fields)
        events.append(Linked(**fields, hash=previous))
    return events


EDITS = {
    "data": lambda e: replace(e, data={"edited": e.data}),
    "type": lambda e: replace(e, type="task_completed"),
    "node_id": lambda e: replace(e, node_id=(e.node_id or "") + "x"),
    "attempt": lambda e: replace(e, attempt=(e.attempt or 0) + 1),
    "timestamp": lambda e: replace(e, timestamp=e.timestamp + timedelta(microseconds=1)),
    "hash": lambda e: replace(e, hash="0" * 64),
}


@given(logs())
def test_an_untouched_log_verifies(events: list[Linked]) -> None:
    assert first_break(events, last_hash=events[-1].hash) is None


@given(logs(), st.data(), st.sampled_from(sorted(EDITS)))
def test_any_single_edit_breaks_the_chain_at_that_seq(
    events: list[Linked], data: st.DataObject, field: str
) -> None:
    index = data.draw(st.integers(min_value=0, max_value=len(events) - 1))
    edited = [*events[:index], EDITS[field](events[index]), *events[index + 1 :]]
    found = first_break(edited, last_hash=events[-1].hash)
    assert found is not None, (field, found)
    assert found.seq == events[index].seq, (field, found)


@given(logs(), st.data())
def test_removing_an_event_breaks_the_chain_where_it_was(
    events: list[Linked], data: st.DataObject
) -> None:
    index = data.draw(st.integers(min_value=0, max_value=len(events) - 1))
    found = first_break(events[:index] + events[index + 1 :], last_hash=events[-1].hash)
    assert found is not None
    # A gap shows at the missing seq; a cut-off end, at the head the execution recorded.
    assert found.seq == (events[index].seq if index < len(events) - 1 else len(events) - 1)


@given(logs())
def test_rewriting_every_hash_after_an_edit_still_misses_the_recorded_head(
    events: list[Linked],
) -> None:
    """A forger who re-chains the rest of the log cannot also match last_hash."""
    previous, forged = GENESIS, []
    for event in [replace(events[0], data={"forged": True}), *events[1:]]:
        previous = event_hash(previous, **event.fields())
        forged.append(replace(event, hash=previous))
    assert first_break(forged) is None
    assert first_break(forged, last_hash=events[-1].hash) is not None


def test_the_canonical_form_is_sorted_compact_json_with_utc_microseconds() -> None:
    text = canonical(
        seq=3,
        type="task_completed",
        node_id="a",
        attempt=1,
        data={"b": [1.0, 2.5], "a": "é"},
        timestamp=datetime(2026, 1, 31, 13, 0, tzinfo=UTC) + timedelta(hours=0),
    )
    assert text == (
        '{"attempt":1,"data":{"a":"\\u00e9","b":[1,2.5]},"node_id":"a","seq":3,'
        '"timestamp":"2026-01-31T13:00:00.000000Z","type":"task_completed"}'
    )
    assert link(GENESIS, text) == event_hash(
        GENESIS,
        seq=3,
        type="task_completed",
        node_id="a",
        attempt=1,
        data=json.loads('{"a": "é", "b": [1, 2.5]}'),
        timestamp=datetime(2026, 1, 31, 13, 0, tzinfo=UTC),
    )


@pytest.mark.parametrize(
    ("written", "read_back"),
    [
        # jsonb keeps the decimal value, not the spelling: what comes back hashes the same.
        (1.0, 1),
        (1e16, 10**16),
        (1e300, 10**300),
        (-0.0, 0),
        ((1, 2), [1, 2]),
        ({1: "a"}, {"1": "a"}),
        ({True: None, None: 2.5}, {"true": None, "null": 2.5}),
        (0.1, 0.1),
    ],
)
def test_values_hash_the_same_after_the_database_round_trip(written, read_back) -> None:
    assert json.dumps(normalize(written)) == json.dumps(normalize(read_back))


def test_a_timestamp_in_another_zone_hashes_as_the_same_instant() -> None:
    later = datetime.fromisoformat("2026-01-31T14:00:00.000001+01:00")
    fields = {"seq": 1, "type": "workflow_started", "node_id": None, "attempt": None, "data": {}}
    assert event_hash(GENESIS, **fields, timestamp=later) == event_hash(
        GENESIS, **fields, timestamp=datetime(2026, 1, 31, 13, 0, 0, 1, tzinfo=UTC)
    )


def test_nan_has_no_canonical_form_and_shows_as_a_break() -> None:
    with pytest.raises(ValueError, match="NaN"):
        normalize({"x": float("nan")})
    event = Linked(1, "workflow_started", None, None, {"x": float("inf")}, T0, "")
    found = first_break([event])
    assert found is not None
    assert found.seq == 1
    assert "canonical" in found.reason


def _reference_normalize(value: Any) -> Any:
    """normalize as first written (isinstance only): the fast paths must give the same."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        if isinstance(value, float):
            if value.is_integer() and abs(value) < 2**53:
                return int(value)
            return value
        if abs(value) < 2**53:
            return value
        try:
            return float(value)
        except OverflowError:
            return value
    if isinstance(value, dict):
        return {
            (k if isinstance(k, str) else json.dumps(k)): _reference_normalize(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_reference_normalize(v) for v in value]
    raise TypeError(type(value).__name__)


def _reference_canonical(**fields: Any) -> str:
    """canonical as first written: a dict through json.dumps, the time through strftime."""
    moment = fields["timestamp"]
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    body = {
        "attempt": fields["attempt"],
        "data": _reference_normalize(fields["data"]),
        "node_id": fields["node_id"],
        "seq": fields["seq"],
        "timestamp": moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "type": str(fields["type"]),
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


wide_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**70), max_value=2**70).map(float)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([2.0**53, -(2.0**53), 2**53, 2**53 - 1, -(2**53) + 1, 10**400, 0.0, -0.0])
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text(max_size=4), inner, max_size=4)
        | st.dictionaries(st.integers(-3, 3) | st.booleans() | st.none(), inner, max_size=3)
    ),
    max_leaves=16,
)
#: Naive moments too: the chain takes a naive datetime as UTC.
_FIRST, _LAST = datetime(1, 1, 2), datetime(9999, 12, 30)  # noqa: DTZ001
_ZONES = st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30))])
moments = st.datetimes(_FIRST, _LAST) | st.datetimes(_FIRST, _LAST, timezones=_ZONES)


@given(
    wide_json,
    moments,
    st.none() | st.integers(0, 10**6) | st.just(2**60),
    st.none() | st.text(max_size=6),
    st.integers(1, 2**40),
)
def test_the_fast_canonical_form_is_the_reference_one(
    data: Any, moment: datetime, attempt: int | None, node_id: str | None, seq: int
) -> None:
    fields = {
        "seq": seq, "type": "task_completed", "node_id": node_id, "attempt": attempt,
        "data": data, "timestamp": moment,
    }  # fmt: skip
    assert canonical(**fields) == _reference_canonical(**fields)
    assert normalize(data) == _reference_normalize(data)
    assert json.dumps(normalize(data)) == json.dumps(_reference_normalize(data))
