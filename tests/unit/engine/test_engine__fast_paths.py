"""The core's fast paths give what the long ways give (lane P: speed, no behaviour change)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from hypothesis import example, given
from hypothesis import strategies as st

from executions.engine import payloads as p
from executions.engine.errors import ErrorRecord
from executions.engine.events import EventType
from executions.engine.timeutil import EARLIEST, LATEST, plus_seconds
from tests.unit.engine.test_engine__payloads import STORED
from workflows.dsl.limits import limits, overridden, recorded


def test_a_decision_carries_only_a_payload_its_data_decodes_back_to() -> None:
    carried = 0
    for event_type, data in STORED:
        cls = p.PAYLOADS[event_type]
        payload = p.decode(cls, data)
        decision = p.decided(event_type, payload, "n", 1)
        assert decision.data == data, event_type
        if decision.payload is None:
            continue
        carried += 1
        assert decision.payload is payload
        again = p.decode(cls, decision.data)
        assert again == payload, event_type
        # Field for field the same objects, not merely equal ones (True is not 1).
        for name in payload.__dataclass_fields__:
            if name != "extra":
                assert getattr(again, name) is getattr(payload, name), (event_type, name)
        assert p.decode(cls, decision.data, decision.payload) is payload
    assert carried > 50


def test_a_decision_with_an_error_or_kept_keys_carries_no_payload() -> None:
    failed = p.TaskFailed(error=ErrorRecord("Boom", "no"))
    assert p.decided(EventType.TASK_FAILED, failed, "n", 1).payload is None
    kept = p.TaskCompleted(output=1, extra={"output": 2})
    decision = p.decided(EventType.TASK_COMPLETED, kept, "n", 1)
    assert decision.payload is None
    assert p.decode(p.TaskCompleted, decision.data).output == 2  # what the log says


def test_only_decides_working_events_carry_the_payload() -> None:
    decision = p.decided(EventType.TASK_SKIPPED, p.Reason(reason="r"), "n")
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    assert decision.as_event(3, moment).payload is None
    typed = decision.as_event(3, moment, typed=True)
    assert typed.payload is decision.payload
    assert typed == decision.as_event(3, moment)  # payload is not part of equality
    assert p.decode(p.TaskScheduled, typed.data, typed.payload) == p.TaskScheduled(
        extra={"reason": "r"}
    )  # a payload of another class is never taken for this one


def _saturated(moment: datetime, seconds: float) -> datetime:
    """plus_seconds' long way, as it was before its fast path."""
    if math.isnan(seconds):
        seconds = 0.0
    room_after = (LATEST - moment).total_seconds()
    room_before = (EARLIEST - moment).total_seconds()
    return moment + timedelta(seconds=min(max(seconds, room_before), room_after))


@given(
    st.datetimes(  # hypothesis takes naive bounds and adds the zone itself
        min_value=datetime(1970, 1, 1),  # noqa: DTZ001
        max_value=datetime(8999, 12, 31),  # noqa: DTZ001
        timezones=st.just(UTC),
    ),
    st.floats(allow_nan=True, allow_infinity=True)
    | st.floats(min_value=-4e8, max_value=4e8)
    | st.integers(min_value=-(10**9), max_value=10**9),
)
@example(datetime(1990, 1, 1, tzinfo=UTC), -10.0 * 365 * 24 * 3600)
@example(datetime(8900, 1, 1, tzinfo=UTC), 10.0 * 365 * 24 * 3600)
@example(datetime(8999, 1, 1, tzinfo=UTC), 1e12)
@example(datetime(2026, 1, 1, tzinfo=UTC), math.nan)
def test_plus_seconds_fast_path_is_the_saturated_sum(moment: datetime, seconds: float) -> None:
    assert plus_seconds(moment, seconds) == _saturated(moment, seconds)


def test_recorded_bounds_follow_the_settings_they_were_applied_to() -> None:
    values = {"max_expression_work": 1234}
    outside = limits()
    with recorded(values) as first:
        assert first.max_expression_work == 1234
        assert first.max_step_work == outside.max_step_work
    # Same recorded values, other settings under them: not the bounds cached above.
    with overridden(max_step_work=777), recorded(values) as second:
        assert (second.max_expression_work, second.max_step_work) == (1234, 777)
    with recorded(dict(values, max_expression_work=99)) as third:
        assert third.max_expression_work == 99
    assert limits() is outside
