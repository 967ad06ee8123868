from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

#: Instants are kept inside this range, so that arithmetic on them and the database
#: columns they go to never overflow (datetime itself stops at year 9999).
LATEST = datetime(9000, 1, 1, tzinfo=UTC)
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
#: Moments and offsets for which `moment + seconds` is surely inside the range above.
_SHORT = 10.0 * 365 * 24 * 3600
_SAFE_FROM = datetime(1990, 1, 1, tzinfo=UTC)
_SAFE_UNTIL = datetime(8900, 1, 1, tzinfo=UTC)


def plus_seconds(moment: datetime | None, seconds: float) -> datetime:
    """`moment + seconds`, saturated into [EARLIEST, LATEST]: never OverflowError, whatever
    the number (NaN counts as 0). Callers that must refuse a long wait check their bound
    before (limits.py); this only guarantees that nothing downstream breaks."""
    if moment is None:
        raise ValueError("the state has no time yet: fold at least one event first")
    if -_SHORT <= seconds <= _SHORT and moment.tzinfo and _SAFE_FROM <= moment <= _SAFE_UNTIL:
        # Far from both ends (NaN fails the comparison): nothing to saturate, the same
        # sum. The usual case (retry backoffs), which verify meets on every retry. (A naive
        # moment takes the long way, to fail there as it always did.)
        return moment + timedelta(seconds=seconds)
    if math.isnan(seconds):
        seconds = 0.0
    room_after = (LATEST - moment).total_seconds()
    room_before = (EARLIEST - moment).total_seconds()
    return moment + timedelta(seconds=min(max(seconds, room_before), room_after))
