"""What the lock hands its holder (executions/kernel/lock.py): the locked row and what the
holder owes the inbox once it lets go, as typed fields instead of attributes on the row;
and, for a block (a worker's message, a service's call), the looks its thread still owes
(`looks_owed`)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from executions.models import Execution


@dataclass(eq=False)
class Look:
    """The look at the inbox after commit that every holder of an execution's lock owes
    the workers who found it taken. A unit of work takes it over (`taken`), to look after
    its own on_commit work (its state cached, its messages sent)."""

    execution_id: str
    #: The look itself (lock.after_commit for this execution), run once the lock is let go.
    run: Callable[[], None]
    #: A unit of work will look (or its caller looks itself): the lock's own look is off.
    taken: bool = False
    #: A unit drained the inbox and was never committed, in a transaction that was: the
    #: facts it took are gone from the inbox and not in the log. A bug, said loudly.
    uncommitted: bool = False


@dataclass(eq=False)
class Locked:
    """An execution's row, locked until the transaction ends."""

    execution: Execution
    #: Whether the inbox may hold facts: read with a lock taken without waiting (as of
    #: now); True where not asked (a lock that waited reads its row as of before the wait).
    inbox_waiting: bool = True
    #: The look after commit this holder owes (None: no inbox, on SQLite).
    look: Look | None = None

    @classmethod
    def new(cls, execution: Execution) -> Locked:
        """An execution whose row no other transaction can see yet (being started): it
        needs no lock, and no worker knows it to leave a fact in its inbox."""
        return cls(execution, inbox_waiting=False)


#: The executions whose lock this thread let go of without a look since, inside a
#: `looks_owed` block (elsewhere nothing is kept).
_owed = threading.local()


@contextmanager
def looks_owed() -> Iterator[set[str]]:
    """For the block (a worker's message, a service's call: kernel/lock.py `looking_after`),
    the executions whose lock this thread took and whose inbox it has not looked at to the
    end since (kernel/lock.py, "The look at the end of a block"): `owe` adds one, a look
    run to the end by this thread (`settle`) takes it out. What is left at the end is owed
    a look. Not nested: a block inside another keeps the outer one's set without asking for
    its own (kernel/lock.py `looking_after` checks `owing` first)."""
    assert not owing(), "looks_owed inside looks_owed: the outer block's end looks"
    owed: set[str] = set()
    _owed.ids = owed
    try:
        yield owed
    finally:
        _owed.ids = None


def owing() -> bool:
    """Whether this thread is inside a `looks_owed` block (whose end looks at what it owes)."""
    return getattr(_owed, "ids", None) is not None


def owe(execution_id: str) -> None:
    """This thread took the execution's lock: it owes a look until one runs after it."""
    owed = getattr(_owed, "ids", None)
    if owed is not None:
        owed.add(execution_id)


def settle(execution_id: str) -> None:
    """This thread looked at the execution's inbox to the end, after every lock of its own."""
    owed = getattr(_owed, "ids", None)
    if owed is not None:
        owed.discard(execution_id)
