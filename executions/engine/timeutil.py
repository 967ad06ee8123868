from __future__ import annotations

from datetime import datetime, timedelta


def plus_seconds(moment: datetime | None, seconds: float) -> datetime:
    if moment is None:
        raise ValueError("the state has no time yet: fold at least one event first")
    return moment + timedelta(seconds=seconds)
