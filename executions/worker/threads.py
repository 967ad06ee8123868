"""A thread one per process, as the lease keeper (worker/lease.py) and the watchdogs' clock
(worker/watchdog.py) are."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar


class _ProcessThread(Protocol):
    #: The process that started it: a forked child sees its parent's, which is not running.
    pid: int

    def start(self) -> None: ...

    def is_alive(self) -> bool: ...


T = TypeVar("T", bound=_ProcessThread)


class PerProcess(Generic[T]):
    """Calling it returns this process's thread, started on first use (in a prefork pool
    child: after the fork, since threads do not survive one)."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._thread: T | None = None
        self._lock = threading.Lock()
        os.register_at_fork(after_in_child=self._after_fork_in_child)

    def _current(self) -> T | None:
        thread = self._thread
        if thread is not None and thread.pid == os.getpid() and thread.is_alive():
            return thread
        return None

    def __call__(self) -> T:
        thread = self._current()
        if thread is not None:
            return thread
        with self._lock:
            thread = self._current()
            if thread is None:
                thread = self._make()
                thread.start()
                self._thread = thread
            return thread

    def _after_fork_in_child(self) -> None:
        # A lock held by a parent's thread at the fork would stay held in the child.
        self._thread, self._lock = None, threading.Lock()
