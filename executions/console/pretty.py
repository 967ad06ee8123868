"""JSON as readable, escaped HTML: indented, with long values folded into <details>.

Pure (html.escape, no Django): the admin marks the result safe. Everything a value holds
is escaped; only the markup this module writes is not. Short containers stay on one line,
long strings and large nested containers fold (the summary says what is inside), and a
value too large to show is cut with a note: the API serves it whole.
"""

from __future__ import annotations

import json
from html import escape as _escape
from typing import Any

#: A container whose compact JSON is at most this long is written on one line.
INLINE = 72
#: A string longer than this folds, showing its first PREVIEW characters.
LONG_STRING = 160
PREVIEW = 60
#: A nested container whose compact JSON is longer than this folds.
FOLD = 400
#: Beyond this many characters of compact JSON only a prefix is shown.
MOST = 100_000


def escape(text: str) -> str:
    """Text content: <, > and & escaped (quotes need not be outside attributes)."""
    return _escape(text, quote=False)


def pretty(value: Any) -> str:
    """HTML for `value`; put it in an element styled `white-space: pre-wrap`."""
    compact = _dumps(value)
    if len(compact) > MOST:
        cut = escape(compact[:MOST])
        return (
            f'<details class="fold"><summary>{_kind(value)} ({len(compact):,} characters, '
            f"too large to lay out: the start of it)</summary>{cut}…</details>"
        )
    out: list[str] = []
    _render(value, 0, out)
    return "".join(out)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, separators=(", ", ": "))


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return f"{{…}} {len(value)} key{'s' if len(value) != 1 else ''}"
    if isinstance(value, list):
        return f"[…] {len(value)} item{'s' if len(value) != 1 else ''}"
    return "a value"


def _render(value: Any, depth: int, out: list[str]) -> None:
    if isinstance(value, str):
        if len(value) <= LONG_STRING:
            out.append(escape(_dumps(value)))
            return
        preview = escape(_dumps(value[:PREVIEW])[:-1])
        whole = escape(value)
        out.append(
            f'<details class="fold"><summary>{preview}…" ({len(value):,} characters)'
            f'</summary><span class="long">{whole}</span></details>'
        )
        return
    if not isinstance(value, dict | list):
        out.append(escape(_dumps(value)))
        return
    compact = _dumps(value)
    if len(compact) <= INLINE:
        out.append(escape(compact))
        return
    folded = depth > 0 and len(compact) > FOLD
    if folded:
        out.append(f'<details class="fold"><summary>{escape(_kind(value))}</summary>')
    opening, closing = ("{", "}") if isinstance(value, dict) else ("[", "]")
    inner = "  " * (depth + 1)
    out.append(opening + "\n")
    items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
    for index, (key, item) in enumerate(items):
        out.append(inner)
        if isinstance(value, dict):
            out.append(escape(_dumps(str(key))) + ": ")
        _render(item, depth + 1, out)
        out.append(",\n" if index < len(items) - 1 else "\n")
    out.append("  " * depth + closing)
    if folded:
        out.append("</details>")
