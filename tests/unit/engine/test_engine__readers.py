"""fold's typed readers give exactly what a full decode gives (engine/readers.py).

fold reads one or two fields of a payload through a reader instead of decoding it whole;
if a reader and the codec ever disagreed, fold would see a different history than every
other reader of the log. Checked on every stored golden event and on generated data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from executions.engine import payloads as p
from executions.engine import readers
from executions.engine.errors import ErrorRecord, normal_json

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "histories"

READERS = [
    (readers.SCHEDULED_INPUT, p.TaskScheduled, "input"),
    (readers.SCHEDULED_TYPE, p.TaskScheduled, "type"),
    (readers.COMPLETED_OUTPUT, p.TaskCompleted, "output"),
    (readers.RETRY_DUE_AT, p.TaskRetryScheduled, "due_at"),
    (readers.REASON, p.Reason, "reason"),
    (readers.TIMER_INPUT, p.TimerStarted, "input"),
    (readers.TIMER_KIND, p.TimerFired, "kind"),
]


def golden_data() -> list[dict[str, Any]]:
    return [
        event["data"]
        for path in sorted(GOLDEN.glob("*.json"))
        for event in json.loads(path.read_text())["events"]
    ]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=8,
)


@pytest.mark.parametrize(("read", "cls", "name"), READERS, ids=[r[2] for r in READERS])
def test_reader_equals_full_decode_on_every_golden_event(read, cls, name) -> None:
    for data in golden_data():
        assert read(data, None) == getattr(p.decode(cls, data), name), data


@pytest.mark.parametrize(("read", "cls", "name"), READERS, ids=[r[2] for r in READERS])
@given(data=st.dictionaries(st.sampled_from(["input", "type", "output", "due_at", "reason",
                                             "kind", "extra"]), json_values))  # fmt: skip
def test_reader_equals_full_decode_on_any_object(read, cls, name, data) -> None:
    decoded = p.decode(cls, data)
    assert read(data, None) == getattr(decoded, name)
    # A carried payload of the class is read as it is.
    assert read(data, decoded) == getattr(decoded, name)


def test_failure_json_equals_decoding_the_error() -> None:
    default = ErrorRecord(type="Unknown", message="no error recorded")
    for data in golden_data():
        if "error" not in data:
            continue
        expected = (p.decode(p.TaskFailed, data).error or default).to_json()
        assert readers.failure_json(data, None, default) == expected, data


@given(raw=st.dictionaries(st.sampled_from(["type", "message", "retryable", "details", "x"]),
                           json_values))  # fmt: skip
def test_normal_json_is_from_json_then_to_json(raw) -> None:
    assert normal_json(raw) == ErrorRecord.from_json(raw).to_json()
    assert list(normal_json(raw)) == list(ErrorRecord.from_json(raw).to_json())
