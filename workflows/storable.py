"""What the database can store of a JSON value.

PostgreSQL's json/text types refuse the NUL character (\\u0000) and unpaired surrogates;
SQLite takes them. Whatever reaches a JSON column from outside (a request body, a
definition file) is checked here first, so both backends behave the same and the refusal
names where the character is, instead of a DataError from the insert naming nothing.

No Django and no DRF: the request parser and the definition files use it alike.
"""

from __future__ import annotations

import re
from typing import Any

#: What PostgreSQL's text and jsonb cannot hold: NUL, and a surrogate code point with no
#: partner (JSON may spell one, "\\ud800"; Python's json gives it as a lone character).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def unstorable_path(value: Any) -> list[str] | None:
    """The path to the first string (or key) holding a NUL or an unpaired surrogate, or
    None. Iterative: bodies may be deep."""
    stack: list[tuple[Any, list[str]]] = [(value, [])]
    while stack:
        current, path = stack.pop()
        if isinstance(current, str):
            if _UNSTORABLE.search(current):
                return path
        elif isinstance(current, dict):
            for key, item in current.items():
                if _UNSTORABLE.search(key):
                    return [*path, key.encode("unicode_escape").decode("ascii")]
                stack.append((item, [*path, key]))
        elif isinstance(current, list):
            stack.extend((item, [*path, str(index)]) for index, item in enumerate(current))
    return None


def unstorable_message(path: list[str]) -> str:
    """The refusal of a value with an unstorable character at `path` (unstorable_path's)."""
    return (
        "NUL characters (\\u0000) and unpaired surrogates (\\ud800-\\udfff) are not "
        f"accepted (at {'.'.join(path) or 'top'})."
    )
