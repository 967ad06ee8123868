"""Django signals the engine sends to the host project's code.

`execution_finished` is sent after the commit that ends an execution (succeeded, failed
or cancelled), in the process that committed it (usually a worker), with `execution`, a
`workflows.api` handle, and `status`. Once per ending: a failed execution that is retried
and ends again sends it again. Like Django's own post_save it is sent in-process after
the commit, so a process killed between the commit and the send does not send it (the
ending is in the log either way). A receiver's exception is logged and goes no further:
the engine's work is committed, and nothing a receiver does can undo or stop it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.dispatch import Signal

log = logging.getLogger(__name__)

execution_finished = Signal()

#: Makes the handle receivers get from an execution id; set by workflows.api, which owns
#: the handle (the engine's kernel sends the signal and must not import its callers).
handle_factory: Callable[[str], Any] = str


def send_finished(execution_id: str, status: str) -> None:
    if not execution_finished.has_listeners():
        return
    handle = handle_factory(execution_id)
    for receiver, result in execution_finished.send_robust(
        sender=None, execution=handle, status=status
    ):
        if isinstance(result, Exception):
            log.error(
                "execution_finished receiver %r raised for execution %s",
                receiver,
                execution_id,
                exc_info=result,
            )
