"""Strict parsing of what a request carries: JSON bodies and query parameters.

Query numbers are ASCII digits only: Python's int() also takes "²", "٣" and " 7 ", and
an unbounded digit string hits the interpreter's conversion limit (a ValueError, a 500).

A JSON body holding what the database cannot store (workflows/storable.py) is refused at
the door: a 400 that names where the character is, never a 500 or a generic 400.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.parsers import JSONParser
from rest_framework.request import Request

from workflows.storable import unstorable_message, unstorable_path

#: More digits than any bound below needs: refused before int() ever sees them.
_MAX_DIGITS = 19


def query_int(request: Request, name: str, *, default: int, minimum: int = 0, maximum: int) -> int:
    """?name=N as an int in [minimum, maximum]; absent gives default; anything else (empty,
    signs, spaces, non-ASCII digits, out of range) is a 400 naming the parameter."""
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not (raw.isascii() and raw.isdigit() and len(raw) <= _MAX_DIGITS) or not (
        minimum <= int(raw) <= maximum
    ):
        shown = raw if len(raw) <= 40 else f"{raw[:40]}..."
        raise ValidationError(
            {name: [f"{shown!r} is not a whole number from {minimum} to {maximum}."]}
        )
    return int(raw)


def query_choice(request: Request, name: str, choices: list[str]) -> str | None:
    """?name=one of choices, or None when absent; anything else (even empty) is a 400."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    if raw not in choices:
        raise ValidationError({name: [f"Unknown {name} {raw[:40]!r}; one of {choices}."]})
    return raw


def query_text(request: Request, name: str, *, max_length: int) -> str | None:
    """?name=text of 1 to max_length characters, or None when absent. Empty is a 400: read
    as "no filter" it would answer a different question than the one asked."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    if raw == "":
        raise ValidationError({name: [f"Empty: give a value, or leave {name} out."]})
    if len(raw) > max_length:
        raise ValidationError({name: [f"At most {max_length} characters."]})
    if "\x00" in raw:
        raise ValidationError({name: ["NUL characters (\\u0000) are not accepted."]})
    return raw


#: RFC 3339's date-time, which is what OpenAPI's `format: date-time` means: a date, "T", a
#: time with seconds (and any fraction), then "Z" or an offset. ISO 8601 (and so Python and
#: Django) also takes a bare date, no seconds, no offset, "+0200" or "20300101", which the
#: schema calls invalid; so they are refused before the parsing.
RFC3339 = re.compile(
    r"(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})\Z", re.ASCII
)
DATE_TIME_EXAMPLE = "2030-01-01T09:00:00Z or 2030-01-01T09:00:00.5+02:00"


def parse_date_time(text: str) -> datetime:
    """An RFC 3339 date-time as an aware datetime; ValueError says what is wrong with it.
    A leap second (:60) is read as the second after :59, which Python cannot represent."""
    match = RFC3339.match(text)
    shown = text if len(text) <= 40 else f"{text[:40]}..."
    if match is None:
        raise ValueError(f"{shown!r} is not an RFC 3339 date-time: write e.g. {DATE_TIME_EXAMPLE}")
    day, minutes, seconds, fraction, offset = match.groups()
    leap = seconds == "60"
    offset = "+00:00" if offset in "Zz" else offset
    try:
        moment = datetime.fromisoformat(
            f"{day}T{minutes}:{'59' if leap else seconds}{(fraction or '')[:7]}{offset}"
        )
        return moment + timedelta(seconds=1) if leap else moment
    except (ValueError, OverflowError):
        raise ValueError(
            f"{shown!r} is out of range: no such date, time or offset (years 0001 to 9999)"
        ) from None


class StrictJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        data = super().parse(stream, media_type, parser_context)
        path = unstorable_path(data)
        if path is not None:
            field = path[0] if path else "non_field_errors"
            raise ValidationError({field: [unstorable_message(path)]})
        return data


#: The idempotency_key columns' length.
IDEMPOTENCY_KEY_MAX = 255


def idempotency_key(request: Request) -> str | None:
    """The request's Idempotency-Key header (None when absent), or a 400 when it is empty
    (as /schema says: minLength 1) or past the columns' length."""
    key = request.headers.get("Idempotency-Key")
    if key == "":
        raise ValidationError(
            {"Idempotency-Key": ["Must not be empty: omit the header to send no key."]}
        )
    if key is not None and len(key) > IDEMPOTENCY_KEY_MAX:
        raise ValidationError({"Idempotency-Key": [f"At most {IDEMPOTENCY_KEY_MAX} characters."]})
    return key
