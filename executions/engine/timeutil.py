from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

#: Instants are kept inside this range, so that arithmetic on them and the database
#: columns they go to never overflow (datetime itself stops at year 9999).
LATEST = datetime(9000, 1, 1, tzinfo=UTC)
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)


def plus_seconds(moment: datetime | None, seconds: float) -> datetime:
    """`moment + seconds`, saturated into [EARLIEST, LATEST]: never OverflowError, whatever
    the number (NaN counts as 0). Callers that must refuse a long wait check their bound
    before (limits.py); this only guarantees that nothing downstream breaks."""
    if moment is None:
        raise ValueError("the state has no time yet: fold at least one event first")
    if math.isnan(seconds):
        seconds = 0.0
    room_after = (LATEST - moment).total_seconds()
    room_before = (EARLIEST - moment).total_seconds()
    return moment + timedelta(seconds=min(max(seconds, room_before), room_after))
