"""The hash chain over an execution's log: each event's hash covers every event before it.

    hash(seq N) = hex SHA-256( hash(seq N-1)  +  canonical JSON of event N )

with hash(seq 0) = "" (the empty string), UTF-8 encoded. Pure: no Django, no I/O.

The canonical JSON is what the store writes *and* what it reads back, on PostgreSQL
(jsonb) as on SQLite (text), so a value that survives the round trip hashes the same:

- an object with exactly the keys `seq`, `type`, `node_id`, `attempt`, `data`,
  `timestamp`; keys sorted at every level, no spaces (`","` and `":"` separators), non-ASCII
  as `\\uXXXX` escapes (so lone surrogates cannot break the encoding);
- `timestamp` as ISO 8601 in UTC with microseconds: `2026-01-31T12:00:00.000000Z` (both
  databases keep microseconds; a naive datetime is taken as UTC);
- numbers: jsonb keeps a number's decimal value but not its spelling (`1e16` comes back as
  the integer `10000000000000000`, `2.0` may come back as `2.0` or `2`), so an integral
  float with |x| < 2**53 is written as that integer, and any number beyond 2**53 in
  magnitude is written as the shortest float repr of its double (`1e+16`). Numbers beyond
  2**53 are therefore covered at double precision, as any JSON reader would see them;
- object keys as strings, as the JSON encoder writes them (`1` -> "1", `True` -> "true"),
  and tuples as lists.

NaN and infinities are not JSON and never reach the log (the worker refuses them before
recording), so they have no canonical form here: `canonical` raises ValueError on them.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

#: The hash the first event chains onto.
GENESIS = ""
#: The event fields the hash covers, in the canonical form's key order.
_COVERED = ("attempt", "data", "node_id", "seq", "timestamp", "type")
#: Doubles represent every integer up to here exactly.
_EXACT = 2**53


def _number(value: int | float) -> int | float:
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("NaN and infinities are not JSON: they have no canonical form")
        if value.is_integer() and abs(value) < _EXACT:
            return int(value)
        return value
    if abs(value) < _EXACT:
        return value
    try:
        return float(value)
    except OverflowError:  # beyond any double: jsonb keeps it exactly, and so do we
        return value


def _key(key: Any) -> str:
    """An object key as the JSON encoder writes it (and so as it comes back)."""
    return key if isinstance(key, str) else json.dumps(key)


def normalize(value: Any) -> Any:
    """The JSON value as the canonical form sees it (see the module docstring)."""
    # The exact types the store reads back come first (a replay hashes every event);
    # anything else (subclasses, tuples, other mappings) takes the general way.
    kind = type(value)
    if kind is str or value is None or kind is bool:
        return value
    if kind is dict:
        return {
            (key if type(key) is str else _key(key)): normalize(item) for key, item in value.items()
        }
    if kind is int:
        return value if -_EXACT < value < _EXACT else _number(value)
    if kind is list:
        return [normalize(item) for item in value]
    if kind is float:
        return _number(value)
    return _normalize_any(value)


def _normalize_any(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return _number(value)
    if isinstance(value, Mapping):
        return {_key(key): normalize(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [normalize(item) for item in value]
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def timestamp_text(moment: datetime) -> str:
    if moment.tzinfo is UTC and moment.year >= 1000:
        # What the store reads back (UTC): isoformat is the strftime below, several times
        # faster (strftime's %Y does not pad years before 1000, isoformat does).
        return moment.isoformat(timespec="microseconds")[:-6] + "Z"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


#: json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True), built once
#: (json.dumps builds an encoder per call when given options).
_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode


def canonical(
    *,
    seq: int,
    type: str,
    node_id: str | None,
    attempt: int | None,
    data: Any,
    timestamp: datetime,
) -> str:
    """The canonical JSON of one event (the part of it the chain covers): the text of
    `_ENCODE({"attempt": attempt, "data": normalize(data), "node_id": node_id, "seq": seq,
    "timestamp": timestamp_text(timestamp), "type": str(type)})`, written out in that key
    order (sorted already) without building and sorting the outer object."""
    return (
        f'{{"attempt":{_scalar(attempt)},"data":{_ENCODE(normalize(data))},'
        f'"node_id":{_scalar(node_id)},"seq":{_scalar(seq)},'
        f'"timestamp":{_ENCODE(timestamp_text(timestamp))},"type":{_ENCODE(str(type))}}}'
    )


def _scalar(value: Any) -> str:
    """_ENCODE(value) for the outer fields (not normalized: they are written as given)."""
    if value is None:
        return "null"
    if type(value) is int:
        return int.__repr__(value)  # what the encoder writes for an int
    return _ENCODE(value)


def link(previous: str, event_json: str) -> str:
    return hashlib.sha256((previous + event_json).encode("utf-8")).hexdigest()


def event_hash(previous: str, **fields: Any) -> str:
    """The hash of an event (the keyword arguments of `canonical`) chained onto `previous`
    (GENESIS for seq 1)."""
    return link(previous, canonical(**fields))


@dataclass(frozen=True)
class Linked:
    """One stored event as the chain check needs it: its fields and its stored hash."""

    seq: int
    type: str
    node_id: str | None
    attempt: int | None
    data: Any
    timestamp: datetime
    hash: str

    @classmethod
    def stored(
        cls,
        seq: int,
        type: str,
        node_id: str | None,
        attempt: int | None,
        data: Any,
        timestamp: datetime,
        hash: str,
    ) -> Linked:
        """Linked(...) filling the frozen instance's __dict__ (the dataclass __init__ sets
        each field through object.__setattr__): a replay builds one per stored event."""
        linked = object.__new__(cls)
        linked.__dict__.update(
            seq=seq, type=type, node_id=node_id, attempt=attempt, data=data,
            timestamp=timestamp, hash=hash,
        )  # fmt: skip
        return linked

    def fields(self) -> dict[str, Any]:
        """What the hash covers: every field but the hash itself."""
        return {name: getattr(self, name) for name in _COVERED}


@dataclass(frozen=True)
class ChainBreak:
    """The first seq whose stored hash is not the one its content and predecessor give."""

    seq: int
    reason: str

    def __str__(self) -> str:
        return f"hash chain broken at seq {self.seq}: {self.reason}"


def first_break(events: Iterable[Linked], *, last_hash: str | None = None) -> ChainBreak | None:
    """None when every event's hash matches; else the first seq that does not.

    `events` in seq order, from seq 1. `last_hash`: the execution's recorded head, which
    must equal the last event's hash (a log cut short at its end keeps a valid prefix, but
    not the head). A missing or repeated seq is a break at the seq where it shows.
    """
    previous, expected_seq = GENESIS, 1
    for event in events:
        if event.seq != expected_seq:
            return ChainBreak(expected_seq, f"expected seq {expected_seq}, found seq {event.seq}")
        try:
            wanted = link(
                previous,
                canonical(
                    seq=event.seq,
                    type=event.type,
                    node_id=event.node_id,
                    attempt=event.attempt,
                    data=event.data,
                    timestamp=event.timestamp,
                ),
            )
        except (TypeError, ValueError) as exc:
            return ChainBreak(event.seq, f"its content is not canonical JSON ({exc})")
        if event.hash != wanted:
            shown = event.hash[:12] or "(none)"
            return ChainBreak(
                event.seq, f"stored hash {shown}… but its content hashes to {wanted[:12]}…"
            )
        previous, expected_seq = wanted, expected_seq + 1
    if last_hash is not None and last_hash != previous:
        return ChainBreak(
            expected_seq - 1,
            f"the execution's last_hash {last_hash[:12] or '(none)'}… is not the hash of its "
            f"last event {previous[:12] or '(none)'}… (events removed or last_hash altered)",
        )
    return None
