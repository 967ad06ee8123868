"""JSON bodies, minus what PostgreSQL cannot store.

PostgreSQL's json/text types refuse the NUL character (\\u0000); SQLite takes it. Refusing
it at the door keeps both backends' behaviour the same and turns a would-be 500 into a 400
that names where the character is.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.parsers import JSONParser


def nul_path(value: Any) -> list[str] | None:
    """The path to the first string holding a NUL, or None. Iterative: bodies may be deep."""
    stack: list[tuple[Any, list[str]]] = [(value, [])]
    while stack:
        current, path = stack.pop()
        if isinstance(current, str):
            if "\x00" in current:
                return path
        elif isinstance(current, dict):
            for key, item in current.items():
                if "\x00" in key:
                    return [*path, key.replace("\x00", "\\u0000")]
                stack.append((item, [*path, key]))
        elif isinstance(current, list):
            stack.extend((item, [*path, str(index)]) for index, item in enumerate(current))
    return None


class StrictJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        data = super().parse(stream, media_type, parser_context)
        path = nul_path(data)
        if path is not None:
            message = f"NUL characters (\\u0000) are not accepted (at {'.'.join(path) or 'top'})."
            raise ValidationError({path[0] if path else "non_field_errors": [message]})
        return data
