"""Which held executions of one concurrency key may start now: the pure decision behind
services/admission.py, which counts, locks and starts.

First-in first-out and strict: the head of the queue starts while the key has room for
it, and nothing behind a head that does not fit may pass it (a later, smaller execution
never starves an earlier one). Each held execution carries the limit of its own version:
a new version may change it, and an execution waits under the rule it was created with.

Pure Python: no Django.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Held:
    """One execution waiting for its key, in the queue's order (held first, first)."""

    #: The execution's id.
    execution_id: str
    #: Its version's `concurrency.limit`.
    limit: int


def to_admit(running: int, queue: Sequence[Held]) -> list[str]:
    """The ids to start now, in order: the longest prefix of `queue` such that each one
    starts while fewer than its limit run (`running`, plus those admitted before it)."""
    admitted: list[str] = []
    for held in queue:
        if running + len(admitted) >= held.limit:
            break
        admitted.append(held.execution_id)
    return admitted
