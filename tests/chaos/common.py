"""Helpers every part of the chaos runner uses."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def say(message: str) -> None:
    print(f"chaos: {message}", file=sys.stderr, flush=True)


def db(call: Callable[[], T], timeout: float = 180.0) -> T:
    """`call()`, reconnecting and trying again while the database is away (restarting)."""
    from django.db import InterfaceError, OperationalError, connection

    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except (OperationalError, InterfaceError):
            connection.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
