"""One line appended to a file shared by many processes (the functions' run logs)."""

from __future__ import annotations

import os


def append_line(path: str, line: str) -> None:
    # One short O_APPEND write: lines from concurrent processes never interleave.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{line}\n".encode())
    finally:
        os.close(fd)
